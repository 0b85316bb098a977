package search_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/xiaozhi-hub/hub/search"
)

// b names the devices of realHome by number.
func b(n ...int) []string {
	var out []string
	for _, i := range n {
		out = append(out, fmt.Sprintf("bb:00:00:00:00:%02d", i))
	}
	return out
}

// Devices of realHome by what they are.
var (
	acs         = b(1, 12, 17)
	fans        = b(2, 29)
	lights      = b(3, 4, 14, 15, 19, 23)
	curtains    = b(6, 16)
	vacuum      = b(9)
	humidifiers = b(13, 18)
	heaters     = b(22, 27)
	speakers    = b(5, 7, 20)  // the TV, the speaker, and 小智 with its volume
	airCare     = b(8, 10, 11) // purifier, fresh air, window opener
	water       = b(24, 25)    // kettle, water dispenser
	washer      = b(30)
	lockAndCam  = b(32, 33)
)

func join(sets ...[]string) []string { return slices.Concat(sets...) }

// needCases are what people say to a voice assistant without naming a
// device, and the devices that should answer (the first result must be one
// of want; none of notFirst may be first).
var needCases = []struct {
	say      string
	want     []string
	notFirst []string
}{
	// The four examples of issue 22.
	{"地上好脏", vacuum, b(30)},
	{"主卧太干了", b(13), join(b(18), b(21))}, // the master bedroom's humidifier, not 次卧's, not the dehumidifier
	{"好热啊", join(acs, fans), join(heaters, vacuum, humidifiers)},
	{"too hot in the living room", b(1, 2), join(b(12, 17), heaters, vacuum)},
	// Heat and cold, by room.
	{"热死了", join(acs, fans), heaters},
	{"客厅好热", b(1, 2), b(12, 17)},
	{"it's so hot", join(acs, fans), heaters},
	{"I'm sweating in the bedroom", b(12), heaters},
	{"次卧好冷", b(22, 17), join(fans, vacuum)},
	{"卫生间冻死了", b(27), fans},
	{"it's freezing", join(heaters, acs), fans},
	// Light.
	{"有点暗", lights, vacuum},
	{"看不清", lights, nil},
	{"it's dark in the kitchen", b(23), nil},
	{"主卧太黑了", b(14, 15), b(19)},
	{"太晒了", curtains, vacuum},
	{"the sun is too bright in the bedroom", b(16), b(6)},
	// Sound.
	{"太吵了", speakers, vacuum},
	{"听不清", speakers, nil},
	{"I can't hear it", speakers, nil},
	// Air.
	{"太闷了", airCare, heaters},
	{"it's stuffy in here", airCare, nil},
	{"有股怪味", airCare, nil},
	{"通通风", b(11, 10), nil},
	{"卫生间好闷", b(29), b(27, 28)}, // the exhaust fan of the room named "Bathroom"
	{"the bathroom is too hot", b(29), b(27)},
	{"回南天好潮", b(21), humidifiers},
	{"too humid", b(21), humidifiers},
	{"嗓子干", humidifiers, b(21)},
	{"the air is so dry in the master bedroom", b(13), b(18)},
	// Water, food, laundry.
	{"我渴了", water, nil},
	{"泡杯茶", water, nil},
	{"I'm thirsty", water, nil},
	{"好饿", b(26), nil},
	{"衣服脏了", washer, vacuum},
	{"do the laundry", washer, nil},
	{"晾衣服", b(31), nil},
	{"想洗个澡", b(28), nil},
	// Cleaning.
	{"脏死了", vacuum, nil},
	{"the floor is dusty", vacuum, nil},
	{"拖一下地", vacuum, nil},
	// Going to bed, leaving, coming home.
	{"我要睡觉了", join(lights, curtains), vacuum},
	{"good night", join(lights, curtains), nil},
	{"我出门了", join(lockAndCam[:1], lights), vacuum},
	{"leaving home", join(lockAndCam[:1], lights), nil},
	{"谁在门口", lockAndCam[1:], nil},
	// Tools of services, found the same way.
	{"明天要不要带伞", []string{"svc:weather"}, nil},
	{"will it rain tomorrow", []string{"svc:weather"}, nil},
	{"帮我算一下", []string{"svc:calc"}, nil},
}

func TestNeeds(t *testing.T) {
	x := realIndex(t, realHome())
	for _, c := range needCases {
		t.Run(c.say, func(t *testing.T) {
			res := x.Search(c.say, 5)
			if len(res) == 0 {
				t.Fatalf("%q found nothing, want one of %v", c.say, c.want)
			}
			if !slices.Contains(c.want, res[0].ID) || slices.Contains(c.notFirst, res[0].ID) {
				t.Errorf("%q: first %s, want one of %v (not %v)\n%s", c.say, res[0].ID, c.want, c.notFirst, explain(res))
			}
		})
	}
}

// TestNamesStillFirst: naming a device beats describing a need, and a need
// does not disturb plain requests.
func TestNamesStillFirst(t *testing.T) {
	x := realIndex(t, realHome())
	for _, c := range []struct{ say, want string }{
		{"小熊加湿器", b(18)[0]}, // named, though 卧室加湿器 is in the master bedroom
		{"卧室加湿器", b(13)[0]},
		{"Living room fan", b(2)[0]},
		{"浴霸", b(27)[0]},
		{"除湿机", b(21)[0]},
		{"米家扫地机器人", b(9)[0]},
		{"扫地机", b(9)[0]},
		{"客厅空调调到26度", b(1)[0]},
		{"open the bedroom curtains", b(16)[0]},
		{"turn on the oil heater", b(22)[0]},
		{"calculator", "svc:calc"},
		{"weather", "svc:weather"},
	} {
		res := x.Search(c.say, 3)
		if len(res) == 0 || res[0].ID != c.want {
			t.Errorf("%q: want %s first\n%s", c.say, c.want, explain(res))
		}
	}
}

// TestNeedExplains: the result says which need it answers.
func TestNeedExplains(t *testing.T) {
	x := realIndex(t, realHome())
	res := x.Search("主卧太干了", 1)
	if len(res) != 1 {
		t.Fatalf("no result")
	}
	why := strings.Join(res[0].Why, "; ")
	for _, w := range []string{`room "主卧" matches "主卧"`, `"加湿器" (humidifier), which answers "太干" (too dry)`} {
		if !strings.Contains(why, w) {
			t.Errorf("explanation %q lacks %q", why, w)
		}
	}
}

func explain(res []search.Result) string {
	var b strings.Builder
	for _, r := range res {
		fmt.Fprintf(&b, "  %s %.2f %s\n", r.ID, r.Score, strings.Join(r.Why, "; "))
	}
	return b.String()
}

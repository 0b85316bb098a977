package search

// needTable lets a search find devices and tools by what they do for the
// person speaking: "地上好脏" finds the robot vacuum, "主卧太干了" the
// humidifier in the master bedroom, "too hot in the living room" its air
// conditioner or fan. People speak to a voice assistant this way, about how
// they feel or what they are about to do, rather than naming a device.
//
// Each line is a need: the concepts (conceptTable ids) that answer it, best
// first; those that may also help, weaker; the words people use for it.
// feel holds adjectives, each also said with degree words (热 → 好热, 太热,
// 有点热, 热死了; hot → too hot, so hot, a bit hot); a Chinese adjective of
// one character is only used with them (bare 热 stays a temperature). say
// holds phrases used as they are. Matching is by the longest phrase, so
// "dark mode" stays a screen theme and "衣服好脏" laundry, not the floor.
//
// To add a need: add a line (or words to a line), then a case to
// TestNeeds in needs_test.go saying what a person would say and which
// device should answer. docs/search.md describes the ranking.
var needTable = []struct {
	id      string   // short English name, for explanations
	answers []string // concepts that answer the need, best first
	also    []string // concepts that may help
	feel    []string // adjectives, expanded with degree words
	say     []string // phrases, as they are
}{
	{"dirty floor", []string{"vacuum"}, []string{"washer"},
		[]string{"脏", "dirty", "dusty", "filthy", "messy"},
		[]string{"地上好脏", "地上脏", "地好脏", "地板脏", "地板好脏", "脏死了", "扫地", "扫一下地", "扫扫地", "拖地", "拖一下地", "打扫", "打扫卫生", "搞卫生",
			"灰尘", "好多灰", "都是灰", "有灰", "头发", "猫毛", "狗毛", "碎屑", "脏", "clean the floor", "clean up", "sweep", "mop", "dust", "crumbs", "pet hair"}},
	{"too dry", []string{"humidifier"}, []string{"humidity"},
		[]string{"干", "干燥", "dry"},
		[]string{"嗓子干", "嗓子好干", "喉咙干", "嘴唇干", "皮肤干", "皮肤好干", "空气干", "空气好干", "湿度太低", "湿度低", "流鼻血", "dry air", "dry skin", "dry throat", "humidity is low"}},
	{"too humid", []string{"dehumidifier"}, []string{"ac", "fan", "fresh_air"},
		[]string{"潮", "潮湿", "湿", "闷湿", "湿漉漉", "黏", "humid", "damp", "muggy", "sticky"},
		[]string{"回南天", "返潮", "发霉", "长霉", "湿气重", "湿气好重", "湿度太高", "湿度高", "mold", "mould", "humidity is high"}},
	{"too hot", []string{"ac", "fan"}, []string{"temperature", "curtain"},
		[]string{"热", "闷热", "燥热", "hot", "boiling", "roasting"},
		[]string{"too warm", "so warm", "出汗", "出汗了", "流汗", "一身汗", "满头大汗", "降温", "凉快一下", "凉快点", "吹吹风", "sweating", "sweaty", "cool down", "cool the room", "cool it down"}},
	{"too cold", []string{"heater", "ac"}, []string{"temperature"},
		[]string{"冷", "冻", "凉", "冰", "cold", "chilly", "freezing"},
		[]string{"too cool", "a bit cool", "手脚冰凉", "发抖", "打哆嗦", "取暖", "暖和一下", "暖和点", "升温", "shivering", "warm up", "warm the room", "heat up"}},
	{"too dark", []string{"light"}, []string{"curtain"},
		[]string{"暗", "黑", "昏暗", "dark", "dim", "gloomy"},
		[]string{"看不清", "看不见", "看不清楚", "什么都看不见", "黑漆漆", "黑乎乎", "伸手不见五指", "光线不好", "光线太暗", "can't see", "cannot see", "can not see", "need some light", "lights on"}},
	{"too bright", []string{"curtain", "light"}, []string{"brightness"},
		[]string{"亮", "刺眼", "晃眼", "bright", "glaring"},
		[]string{"glare"}},
	{"sunlight", []string{"curtain"}, nil,
		[]string{"晒", "sunny"},
		[]string{"阳光", "太阳", "太阳光", "西晒", "阳光刺眼", "太阳好大", "太阳太大", "太阳晒", "sun", "sunlight", "sunshine", "too much sun", "sun in my eyes"}},
	{"too loud", []string{"speaker", "volume", "tv"}, nil,
		[]string{"吵", "闹", "响", "大声", "loud", "noisy"},
		[]string{"声音太大", "声音好大", "小点声", "小声点", "小声一点", "安静", "安静点", "安静一点", "别吵", "吵", "quiet down", "keep it down", "turn it down", "shut up"}},
	{"can't hear", []string{"volume", "speaker", "tv"}, nil,
		[]string{"小声"},
		[]string{"听不见", "听不清", "听不到", "听不清楚", "声音太小", "声音好小", "大点声", "大声点", "大声一点", "can't hear", "cannot hear", "can not hear", "speak up", "too quiet", "so quiet", "turn it up"}},
	{"stuffy air", []string{"purifier", "fresh_air"}, []string{"window", "fan"},
		[]string{"闷", "臭", "难闻", "呛", "stuffy", "smelly", "stinky", "musty"},
		[]string{"喘不过气", "空气不好", "空气差", "空气好差", "空气质量", "有味道", "有股味", "有股怪味", "有异味", "怪味", "烟味", "雾霾", "霾", "甲醛", "花粉", "灰蒙蒙",
			"bad air", "air quality", "it smells", "smells bad", "stinks", "smoke", "haze", "smog", "pollen"}},
	{"ventilate", []string{"window", "fresh_air"}, []string{"fan", "purifier"},
		nil,
		[]string{"通风", "通通风", "透气", "透透气", "换气", "换换气", "开窗", "开窗户", "ventilate", "air out", "let some air in", "open the window"}},
	{"thirsty", []string{"kettle", "dispenser"}, nil,
		[]string{"渴", "口渴", "thirsty"},
		[]string{"渴", "渴了", "想喝水", "喝水", "喝点水", "喝杯水", "喝茶", "泡茶", "泡杯茶", "泡咖啡", "冲咖啡", "冲奶粉", "烧水", "烧开水", "开水",
			"drink", "water", "tea", "coffee", "boil water", "make tea", "cup of tea"}},
	{"hungry", []string{"cooker"}, nil,
		[]string{"饿", "hungry", "starving"},
		[]string{"饿了", "做饭", "煮饭", "蒸饭", "煮粥", "吃饭", "cook", "cook dinner", "make dinner", "rice"}},
	{"laundry", []string{"washer"}, []string{"dryer", "clothes_rack"},
		nil,
		[]string{"洗衣服", "洗衣", "衣服脏", "衣服好脏", "衣服脏了", "脏衣服", "床单", "衣服", "laundry", "wash clothes", "wash the clothes", "wash my clothes", "dirty clothes"}},
	{"dry clothes", []string{"clothes_rack", "dryer"}, []string{"washer"},
		nil,
		[]string{"晾衣服", "晒衣服", "晾衣", "晒被子", "衣服干不了", "衣服没干", "烘干", "烘衣服", "dry clothes", "dry the clothes", "dry my clothes", "hang the laundry", "hang up the laundry"}},
	{"bath", []string{"water_heater"}, []string{"heater"},
		nil,
		[]string{"洗澡", "洗个澡", "冲凉", "泡澡", "热水", "shower", "bath", "take a bath", "hot water"}},
	{"bedtime", []string{"light", "curtain"}, []string{"ac", "tv", "lock"},
		nil,
		[]string{"睡觉", "要睡了", "去睡了", "我睡了", "睡了", "睡吧", "晚安", "困了", "好困", "想睡觉", "上床", "go to bed", "going to bed", "bedtime", "bed time", "good night", "goodnight", "sleep", "sleepy", "time to sleep"}},
	{"wake up", []string{"curtain", "light"}, nil,
		nil,
		[]string{"起床", "醒了", "早上好", "早安", "wake up", "good morning", "get up"}},
	{"leaving home", []string{"lock", "light"}, []string{"ac", "tv", "curtain"},
		nil,
		[]string{"出门", "出门了", "我走了", "我出去了", "出去了", "离家", "离开家", "上班去了", "去上班", "leaving", "leaving home", "going out", "heading out", "i'm off", "off to work"}},
	{"coming home", []string{"light", "ac"}, []string{"curtain"},
		nil,
		[]string{"回家", "回来了", "我回来了", "到家", "到家了", "back home", "i'm home", "i'm back", "home now"}},
	{"watch something", []string{"tv"}, []string{"light", "curtain"},
		nil,
		[]string{"看电影", "看电视", "看剧", "追剧", "看球", "看节目", "watch a movie", "watch tv", "watch a show", "movie", "movie time"}},
	{"who is there", []string{"camera", "doorbell"}, []string{"lock"},
		nil,
		[]string{"谁在门口", "门口有人", "有人敲门", "谁来了", "谁啊", "有人吗", "who's at the door", "who is at the door", "someone at the door", "who's there", "who is there"}},
	{"rain", []string{"weather"}, nil,
		nil,
		[]string{"带伞", "下雨", "会下雨", "下雪", "刮风", "冷不冷", "热不热", "穿什么", "穿多少", "umbrella", "rain", "raining", "snow", "what to wear", "jacket"}},
	{"arithmetic", []string{"calculator"}, nil,
		nil,
		[]string{"算一下", "算算", "帮我算", "等于多少", "加上", "减去", "乘以", "除以", "平方", "开方", "how much is", "plus", "minus", "times", "divided by", "square root"}},
}

// Degree words that turn an adjective into a complaint.
var (
	zhBefore = []string{"好", "太", "很", "有点", "有点儿", "有些", "真", "超", "特别", "非常", "这么", "怎么这么", "挺", "老"}
	zhAfter  = []string{"死", "死了", "得要命", "得不行"}
	enBefore = []string{"too", "so", "very", "really", "quite", "pretty", "a bit", "a little", "kind of", "kinda", "way too", "getting", "it's", "i'm", "i am"}
)

// need is a need prepared for the dictionary.
type need struct {
	id      string
	answers []concept // answers first, then also
	nAnswer int
}

// needPhrases returns the phrases of a needTable line: its say phrases,
// and its feel adjectives alone (unless one Chinese character) and with
// degree words.
func needPhrases(feel, say []string) []string {
	out := append([]string(nil), say...)
	for _, f := range feel {
		units := tokenize(f)
		cjk := len(units) > 0 && isCJKUnit(units[0])
		if !cjk || len(units) > 1 {
			out = append(out, f)
		}
		if cjk {
			for _, b := range zhBefore {
				out = append(out, b+f)
			}
			for _, a := range zhAfter {
				out = append(out, f+a)
			}
			continue
		}
		for _, b := range enBefore {
			out = append(out, b+" "+f)
		}
	}
	return out
}

package search_test

import (
	"testing"

	"fmt"

	"github.com/xiaozhi-hub/hub"
	ct "github.com/xiaozhi-hub/hub/catalog/catalogtest"
	"github.com/xiaozhi-hub/hub/search"
)

// kind returns a board-specific tool family, self.<kind>.<verb>, described
// the way firmware authors describe them.
func kind(k, what string, verbs ...string) []hub.Tool {
	var out []hub.Tool
	for _, v := range verbs {
		switch v {
		case "power":
			out = append(out, ct.Tool("self."+k+".set_power", "Turn the "+what+" on or off", `{"on":{"type":"boolean"}}`, "on"))
		case "state":
			out = append(out, ct.Tool("self."+k+".get_state", "Get the current state of the "+what, ""))
		default:
			out = append(out, ct.Tool("self."+k+"."+v, what+": "+v, ""))
		}
	}
	return out
}

var (
	ac = ct.Xiaozhi(true, append(kind("ac", "air conditioner", "power", "state"),
		ct.Tool("self.ac.set_temperature", "Set the target temperature of the air conditioner in degrees Celsius",
			`{"temperature":{"type":"integer","minimum":16,"maximum":30}}`, "temperature"),
		ct.Tool("self.ac.set_mode", "Set the mode of the air conditioner: cool, heat, dry or fan", `{"mode":{"type":"string"}}`, "mode"))...)
	fan      = ct.Xiaozhi(true, append(kind("fan", "fan", "power", "state"), ct.Tool("self.fan.set_speed", "Set the fan speed from 1 to 3", `{"speed":{"type":"integer"}}`, "speed"))...)
	curtain  = ct.Xiaozhi(true, append(kind("curtain", "curtain", "open", "close", "state"), ct.Tool("self.curtain.set_position", "Open the curtain to a position, 0 closed and 100 fully open", `{"position":{"type":"integer"}}`, "position"))...)
	humidify = ct.Xiaozhi(true, append(kind("humidifier", "humidifier", "power", "state"), ct.Tool("self.humidifier.set_level", "Set the target humidity in percent", `{"level":{"type":"integer"}}`, "level"))...)
	heater   = ct.Xiaozhi(true, append(kind("heater", "heater", "power", "state"), ct.Tool("self.heater.set_level", "Set the heating level from 1 to 3", `{"level":{"type":"integer"}}`, "level"))...)
)

// realHome is a home of 33 devices and 2 services across the rooms people
// have (客厅, 主卧, 次卧, 厨房, 卫生间, 阳台, 玄关), named the way people
// name them: brand names, rooms in the name or not, some names and a room
// in English.
func realHome() []search.Doc {
	d := func(n int, name, room string, tools []hub.Tool, aliases ...string) search.Doc {
		return search.Doc{ID: fmt.Sprintf("bb:00:00:00:00:%02d", n), Name: name, Room: room, Tools: tools, Aliases: aliases}
	}
	return []search.Doc{
		// 客厅
		d(1, "客厅空调", "客厅", ac),
		d(2, "Living room fan", "客厅", fan),
		d(3, "客厅吸顶灯", "客厅", ct.Lamp(), "大灯"),
		d(4, "落地灯", "客厅", ct.Lamp(ct.RGBTool)),
		d(5, "小米电视", "客厅", ct.Xiaozhi(true, append(kind("tv", "television", "power", "state"),
			ct.Tool("self.tv.set_channel", "Switch the television to a channel", `{"channel":{"type":"integer"}}`, "channel"))...)),
		d(6, "客厅窗帘", "客厅", curtain),
		d(7, "小爱音箱", "客厅", ct.Xiaozhi(false)),
		d(8, "空气净化器", "客厅", ct.Xiaozhi(true, append(kind("purifier", "air purifier", "power", "state"),
			ct.Tool("self.purifier.set_mode", "Set the purifier mode: auto, sleep or turbo", `{"mode":{"type":"string"}}`, "mode"))...)),
		d(9, "米家扫地机器人", "客厅", ct.Xiaozhi(true, kind("vacuum", "robot vacuum", "start", "pause", "dock", "state")...)),
		d(10, "新风机", "客厅", ct.Xiaozhi(true, kind("fresh_air", "fresh air system", "power", "state")...)),
		d(11, "客厅开窗器", "客厅", ct.Xiaozhi(true, kind("window", "window opener", "open", "close")...)),
		// 主卧
		d(12, "主卧空调", "主卧", ac),
		d(13, "卧室加湿器", "主卧", humidify),
		d(14, "床头灯", "主卧", ct.Lamp()),
		d(15, "Bedroom light", "主卧", ct.Lamp()),
		d(16, "主卧窗帘", "主卧", curtain),
		// 次卧
		d(17, "次卧空调", "次卧", ac),
		d(18, "小熊加湿器", "次卧", humidify),
		d(19, "台灯", "次卧", ct.Lamp()),
		d(20, "小智", "次卧", ct.Xiaozhi(false, ct.PhotoTool)),
		d(21, "除湿机", "次卧", ct.Xiaozhi(true, kind("dehumidifier", "dehumidifier", "power", "state")...)),
		d(22, "Oil heater", "次卧", heater),
		// 厨房
		d(23, "厨房灯", "厨房", ct.Lamp()),
		d(24, "电水壶", "厨房", ct.Xiaozhi(true, ct.Tool("self.kettle.boil", "Boil the water", ""), ct.Tool("self.kettle.get_temperature", "Get the water temperature", ""))),
		d(25, "饮水机", "厨房", ct.Xiaozhi(true, kind("dispenser", "water dispenser", "power", "state")...)),
		d(26, "电饭煲", "厨房", ct.Xiaozhi(true, kind("cooker", "rice cooker", "start", "state")...)),
		// 卫生间
		d(27, "浴霸", "卫生间", heater),
		d(28, "热水器", "卫生间", ct.Xiaozhi(true, append(kind("water_heater", "water heater", "power", "state"),
			ct.Tool("self.water_heater.set_temperature", "Set the water temperature in degrees Celsius", `{"temperature":{"type":"integer"}}`, "temperature"))...)),
		d(29, "Exhaust fan", "Bathroom", fan),
		// 阳台
		d(30, "洗衣机", "阳台", ct.Xiaozhi(true, kind("washer", "washing machine", "start", "pause", "state")...)),
		d(31, "晾衣架", "阳台", ct.Xiaozhi(true, kind("rack", "clothes drying rack", "raise", "lower")...)),
		// 玄关
		d(32, "智能门锁", "玄关", ct.Xiaozhi(true, append(kind("lock", "door lock", "lock", "state"), ct.UserOnly(ct.Tool("self.lock.unlock", "Unlock the door", "")))...)),
		d(33, "门口摄像头", "玄关", ct.Xiaozhi(true, ct.PhotoTool)),
		// Services: tools beside the devices.
		{ID: "svc:weather", Name: "weather", Tools: []hub.Tool{
			ct.Tool("get_forecast", "Get the weather forecast (temperature, rain, wind) for a city", `{"city":{"type":"string"}}`, "city")}},
		{ID: "svc:calc", Name: "calc", Tools: []hub.Tool{
			ct.Tool("calculator", "For mathamatical calculation, always use this tool to calculate the result of a python expression. You can use 'math' or 'random' directly, without 'import'.",
				`{"python_expression":{"type":"string"}}`, "python_expression")}},
	}
}

func realIndex(t testing.TB, docs []search.Doc) *search.Index {
	t.Helper()
	x := search.NewIndex()
	for _, d := range docs {
		x.Put(d, "")
	}
	return x
}

// bigHome is realHome repeated (as many homes named alike) past n docs.
func bigHome(n int) []search.Doc {
	var out []search.Doc
	for rep := 0; len(out) < n; rep++ {
		for _, d := range realHome() {
			d.ID = fmt.Sprintf("%s/%03d", d.ID, rep)
			out = append(out, d)
		}
	}
	return out[:n]
}

var benchQueries = []string{"把卧室空调调到26度", "客厅的灯", "地上好脏", "主卧太干了", "好热啊", "too hot in the living room", "turn off the bedroom light", "我要睡觉了"}

func BenchmarkSearch1000(b *testing.B) {
	x := realIndex(b, bigHome(1000))
	for _, q := range benchQueries {
		b.Run(q, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				x.Search(q, 8)
			}
		})
	}
}

// Package catalogtest holds test fixtures for the agent-facing packages
// (catalog, search, mcpserver, agent): a simulated home of devices whose
// tools and things are shaped like real firmware (docs/protocol.md §8.6,
// §9), a registry over a real SQLite store, and fake device connections with
// state.
package catalogtest

import (
	"encoding/json"
	"fmt"

	"github.com/xiaozhi-hub/hub"
)

// Spec describes one device of a test home.
type Spec struct {
	ID      string
	Name    string
	Room    string
	Aliases []string
	Board   string
	Tools   []hub.Tool  // MCP devices (firmware ≥ 1.6.6)
	Things  []hub.Thing // legacy IoT devices (firmware ≤ 1.7)
	// State is the initial IoT state by thing name.
	State map[string]map[string]any
}

// Tool returns a firmware-shaped MCP tool; props is the JSON of
// inputSchema.properties and required lists the required ones.
func Tool(name, desc, props string, required ...string) hub.Tool {
	if props == "" {
		props = "{}"
	}
	schema := `{"type":"object","properties":` + props
	if len(required) > 0 {
		b, _ := json.Marshal(required)
		schema += `,"required":` + string(b)
	}
	return hub.Tool{Name: name, Description: desc, InputSchema: json.RawMessage(schema + "}")}
}

// UserOnly marks a tool as user-only (annotations.audience ["user"]).
func UserOnly(t hub.Tool) hub.Tool {
	t.UserOnly = true
	t.Annotations = json.RawMessage(`{"audience":["user"]}`)
	return t
}

// Firmware 2.x built-in tools (§8.6).
var (
	StatusTool = Tool("self.get_device_status",
		"Provides the real-time information of the device, including the current status of the audio speaker, screen, battery, network, etc.\nUse this tool for: \n1. Answering questions about current condition (e.g. what is the current volume of the audio speaker?)\n2. As the first step to control the device (e.g. turn up / down the volume of the audio speaker, etc.)", "")
	VolumeTool = Tool("self.audio_speaker.set_volume",
		"Set the volume of the audio speaker. If the current volume is unknown, you must call `self.get_device_status` tool first and then call this tool.",
		`{"volume":{"type":"integer","minimum":0,"maximum":100}}`, "volume")
	BrightnessTool = Tool("self.screen.set_brightness", "Set the brightness of the screen.",
		`{"brightness":{"type":"integer","minimum":0,"maximum":100}}`, "brightness")
	ThemeTool = Tool("self.screen.set_theme", "Set the theme of the screen. The theme can be `light` or `dark`.",
		`{"theme":{"type":"string"}}`, "theme")
	PhotoTool = Tool("self.camera.take_photo",
		"Take a photo and explain it. Use this tool after the user asks you to see something.\nArgs:\n  `question`: The question that you want to ask about the photo.\nReturn:\n  A JSON object that provides the photo information.",
		`{"question":{"type":"string"}}`, "question")
	LampState = Tool("self.lamp.get_state", "Get the power state of the lamp", "")
	LampOn    = Tool("self.lamp.turn_on", "Turn on the lamp", "")
	LampOff   = Tool("self.lamp.turn_off", "Turn off the lamp", "")
	RGBTool   = Tool("self.light.set_rgb", "Set the RGB color of the light",
		`{"r":{"type":"integer","minimum":0,"maximum":255},"g":{"type":"integer","minimum":0,"maximum":255},"b":{"type":"integer","minimum":0,"maximum":255}}`, "r", "g", "b")
	Reboot  = UserOnly(Tool("self.reboot", "Reboot the system.", ""))
	Upgrade = UserOnly(Tool("self.upgrade_firmware", "Upgrade firmware from a specific URL. This will download and install the firmware, then reboot the device.",
		`{"url":{"type":"string","description":"The URL of the firmware binary file to download and install","default":"The URL of the firmware binary file to download and install"}}`))
)

// Xiaozhi returns the tools of a firmware 2.x board: status, volume, screen
// (unless noScreen), and the user-only tools.
func Xiaozhi(noScreen bool, extra ...hub.Tool) []hub.Tool {
	tools := []hub.Tool{StatusTool, VolumeTool}
	if !noScreen {
		tools = append(tools, BrightnessTool, ThemeTool)
	}
	tools = append(tools, extra...)
	return append(tools, Reboot, Upgrade)
}

// Lamp returns a board with lamp_controller.h tools.
func Lamp(extra ...hub.Tool) []hub.Tool {
	return Xiaozhi(true, append([]hub.Tool{LampState, LampOn, LampOff}, extra...)...)
}

// Thing returns a legacy IoT thing.
func Thing(name, desc string, props map[string]hub.ThingProperty, methods map[string]hub.ThingMethod) hub.Thing {
	if props == nil {
		props = map[string]hub.ThingProperty{}
	}
	if methods == nil {
		methods = map[string]hub.ThingMethod{}
	}
	return hub.Thing{Name: name, Description: desc, Properties: props, Methods: methods}
}

// Classic IoT things of v1.5-era firmware (§9).
var (
	SpeakerThing = Thing("Speaker", "扬声器",
		map[string]hub.ThingProperty{"volume": {Description: "当前音量值", Type: "number"}},
		map[string]hub.ThingMethod{"SetVolume": {Description: "设置音量", Parameters: map[string]hub.ThingProperty{
			"volume": {Description: "0到100之间的整数", Type: "number"}}}})
	LampThing = Thing("Lamp", "一个测试用的灯",
		map[string]hub.ThingProperty{"power": {Description: "灯是否打开", Type: "boolean"}},
		map[string]hub.ThingMethod{"TurnOn": {Description: "打开灯"}, "TurnOff": {Description: "关闭灯"}})
)

// custom returns a board-specific tool family: self.<kind>.<verb> tools.
func custom(kind, what string, verbs ...string) []hub.Tool {
	var out []hub.Tool
	for _, v := range verbs {
		switch v {
		case "power":
			out = append(out, Tool("self."+kind+".set_power", "Turn the "+what+" on or off",
				`{"on":{"type":"boolean"}}`, "on"))
		case "state":
			out = append(out, Tool("self."+kind+".get_state", "Get the current state of the "+what, ""))
		default:
			out = append(out, Tool("self."+kind+"."+v, fmt.Sprintf("%s: %s", what, v), ""))
		}
	}
	return out
}

var (
	acTools = append(custom("ac", "air conditioner", "power", "state"),
		Tool("self.ac.set_temperature", "Set the target temperature of the air conditioner in degrees Celsius",
			`{"temperature":{"type":"integer","minimum":16,"maximum":30}}`, "temperature"),
		Tool("self.ac.set_mode", "Set the mode of the air conditioner: cool, heat, dry or fan",
			`{"mode":{"type":"string"}}`, "mode"))
	curtainTools = append(custom("curtain", "curtain", "open", "close", "state"),
		Tool("self.curtain.set_position", "Open the curtain to a position, 0 closed and 100 fully open",
			`{"position":{"type":"integer","minimum":0,"maximum":100}}`, "position"))
	fanTools = append(custom("fan", "fan", "power", "state"),
		Tool("self.fan.set_speed", "Set the fan speed from 1 (low) to 3 (high)",
			`{"speed":{"type":"integer","minimum":1,"maximum":3}}`, "speed"))
)

// Home returns a simulated home of 26 devices: 22 on firmware 2.x (MCP) and
// 4 on legacy IoT firmware, across 12 rooms, named the way people name them
// (mostly Chinese, some English).
func Home() []Spec {
	return []Spec{
		{ID: "aa:00:00:00:00:01", Name: "吸顶灯", Room: "客厅", Aliases: []string{"大灯"}, Board: "lamp-controller", Tools: Lamp()},
		{ID: "aa:00:00:00:00:02", Name: "落地灯", Room: "客厅", Board: "bread-compact-wifi",
			Things: []hub.Thing{SpeakerThing, LampThing}, State: map[string]map[string]any{"Speaker": {"volume": 60}, "Lamp": {"power": false}}},
		{ID: "aa:00:00:00:00:03", Name: "小智音箱", Room: "客厅", Board: "esp-box-3", Tools: Xiaozhi(false)},
		{ID: "aa:00:00:00:00:04", Name: "客厅空调", Room: "客厅", Board: "ac-bridge", Tools: Xiaozhi(true, acTools...)},
		{ID: "aa:00:00:00:00:05", Name: "电视", Room: "客厅", Board: "tv-bridge",
			Tools: Xiaozhi(true, append(custom("tv", "television", "power", "state"),
				Tool("self.tv.set_channel", "Switch the television to a channel number", `{"channel":{"type":"integer","minimum":1,"maximum":999}}`, "channel"))...)},
		{ID: "aa:00:00:00:00:06", Name: "客厅窗帘", Room: "客厅", Board: "curtain-motor", Tools: Xiaozhi(true, curtainTools...)},
		{ID: "aa:00:00:00:00:07", Name: "床头灯", Room: "主卧", Board: "lamp-controller", Tools: Lamp(RGBTool)},
		{ID: "aa:00:00:00:00:08", Name: "主卧空调", Room: "主卧", Board: "ac-bridge", Tools: Xiaozhi(true, acTools...)},
		{ID: "aa:00:00:00:00:09", Name: "主卧窗帘", Room: "主卧", Board: "curtain-motor", Tools: Xiaozhi(true, curtainTools...)},
		{ID: "aa:00:00:00:00:10", Name: "加湿器", Room: "主卧", Board: "humidifier-bridge",
			Tools: Xiaozhi(true, append(custom("humidifier", "humidifier", "power", "state"),
				Tool("self.humidifier.set_level", "Set the humidity level in percent", `{"level":{"type":"integer","minimum":30,"maximum":80}}`, "level"))...)},
		{ID: "aa:00:00:00:00:11", Name: "台灯", Room: "次卧", Board: "bread-compact-wifi",
			Things: []hub.Thing{LampThing}, State: map[string]map[string]any{"Lamp": {"power": true}}},
		{ID: "aa:00:00:00:00:12", Name: "小智", Room: "次卧", Board: "esp32-s3-eye", Tools: Xiaozhi(false, PhotoTool)},
		{ID: "aa:00:00:00:00:13", Name: "Desk Lamp", Room: "书房", Board: "lamp-controller", Tools: Lamp()},
		{ID: "aa:00:00:00:00:14", Name: "风扇", Room: "书房", Board: "fan-bridge", Tools: Xiaozhi(true, fanTools...)},
		{ID: "aa:00:00:00:00:15", Name: "厨房灯", Room: "厨房", Board: "lamp-controller", Tools: Lamp()},
		{ID: "aa:00:00:00:00:16", Name: "热水壶", Room: "厨房", Board: "kettle-bridge",
			Tools: Xiaozhi(true, Tool("self.kettle.boil", "烧水：把水烧开", ""),
				Tool("self.kettle.get_temperature", "Get the water temperature", ""))},
		{ID: "aa:00:00:00:00:17", Name: "吊灯", Room: "餐厅", Board: "lamp-controller", Tools: Lamp()},
		{ID: "aa:00:00:00:00:18", Name: "排气扇", Room: "卫生间", Board: "fan-bridge", Tools: Xiaozhi(true, fanTools...)},
		{ID: "aa:00:00:00:00:19", Name: "热水器", Room: "卫生间", Board: "water-heater-bridge",
			Tools: Xiaozhi(true, append(custom("water_heater", "water heater", "power", "state"),
				Tool("self.water_heater.set_temperature", "Set the water temperature in degrees Celsius", `{"temperature":{"type":"integer","minimum":35,"maximum":75}}`, "temperature"))...)},
		{ID: "aa:00:00:00:00:20", Name: "晾衣架", Room: "阳台", Board: "rack-motor",
			Tools: Xiaozhi(true, custom("rack", "clothes drying rack", "raise", "lower", "state")...)},
		{ID: "aa:00:00:00:00:21", Name: "夜灯", Room: "儿童房", Board: "bread-compact-wifi",
			Things: []hub.Thing{LampThing}, State: map[string]map[string]any{"Lamp": {"power": false}}},
		{ID: "aa:00:00:00:00:22", Name: "小智故事机", Room: "儿童房", Aliases: []string{"故事机"}, Board: "bread-compact-wifi",
			Things: []hub.Thing{SpeakerThing}, State: map[string]map[string]any{"Speaker": {"volume": 30}}},
		{ID: "aa:00:00:00:00:23", Name: "门锁", Room: "玄关", Board: "lock-bridge",
			Tools: Xiaozhi(true, append(custom("lock", "door lock", "lock", "state"), UserOnly(Tool("self.lock.unlock", "Unlock the door", "")))...)},
		{ID: "aa:00:00:00:00:24", Name: "门口摄像头", Room: "玄关", Board: "esp32-s3-eye", Tools: Xiaozhi(true, PhotoTool)},
		{ID: "aa:00:00:00:00:25", Name: "Office Speaker", Room: "Office", Board: "esp-box-3", Tools: Xiaozhi(false)},
		{ID: "aa:00:00:00:00:26", Name: "空气净化器", Room: "客厅", Board: "purifier-bridge",
			Tools: Xiaozhi(true, append(custom("purifier", "air purifier", "power", "state"),
				Tool("self.purifier.set_mode", "Set the purifier mode: auto, sleep or turbo", `{"mode":{"type":"string"}}`, "mode"))...)},
	}
}

// Doc fields of a spec, for search tests that do not need a registry.
func (s Spec) Device() hub.Device {
	return hub.Device{ID: s.ID, Name: s.Name, Room: s.Room, Aliases: s.Aliases, Board: s.Board, MCP: len(s.Tools) > 0}
}

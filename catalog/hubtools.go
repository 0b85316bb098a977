package catalog

import (
	"encoding/json"
)

// The hub's own tools, in the spirit of the seed flow: find a device, look
// at it, call it. They are offered instead of the device tools when a home
// has too many devices to list (Options.DirectLimit); search_devices and
// get_device are offered in both modes.
const (
	ToolSearchDevices   = "search_devices"
	ToolGetDevice       = "get_device"
	ToolCallDeviceTool  = "call_device_tool"
	ToolSendIoTCommands = "send_iot_commands"
)

var hubTools = map[string]Tool{
	ToolSearchDevices: {
		Name: ToolSearchDevices, Kind: KindHub,
		Description: "Find smart-home devices by what people call them: name, room, alias or kind of device, in any language " +
			"(e.g. \"客厅 灯\", \"bedroom air conditioner\", \"speaker\"). Returns the best matches first, each with its device_id, " +
			"room, online state, why it matched, and the tools it offers with their parameters. An empty query lists devices. " +
			"Services (outside tools such as a calculator or weather) are found the same way, with a device_id that starts with \"service:\".",
		InputSchema: json.RawMessage(`{"type":"object","properties":{` +
			`"query":{"type":"string","description":"what to look for, e.g. a room and a kind of device: \"客厅 灯\""},` +
			`"limit":{"type":"integer","minimum":1,"maximum":20,"default":5,"description":"how many devices to return (default 5)"}},` +
			`"required":["query"]}`),
	},
	ToolGetDevice: {
		Name: ToolGetDevice, Kind: KindHub,
		Description: "Show one device: its name, room, online state, every tool it offers with its input schema, " +
			"and its legacy IoT things with their last reported state.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{` +
			`"device_id":{"type":"string","description":"the device_id from search_devices"}},"required":["device_id"]}`),
	},
	ToolCallDeviceTool: {
		Name: ToolCallDeviceTool, Kind: KindHub,
		Description: "Call one tool of a device (find device_id and tool names with search_devices or get_device). " +
			"Arguments are checked against the tool's input schema before the device is contacted. " +
			"For legacy IoT devices, tool may be \"Thing.Method\" (e.g. \"Lamp.TurnOn\") or \"Thing\" to read its state.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{` +
			`"device_id":{"type":"string","description":"the device_id from search_devices"},` +
			`"tool":{"type":"string","description":"the tool's name as listed for the device, e.g. self.lamp.turn_on"},` +
			`"arguments":{"type":"object","description":"the tool's arguments, matching its input schema; {} when it takes none"}},` +
			`"required":["device_id","tool"]}`),
	},
	ToolSendIoTCommands: {
		Name: ToolSendIoTCommands, Kind: KindHub,
		Description: "Send commands to a legacy IoT device (firmware 1.x things such as Lamp or Speaker). " +
			"Each command names a thing, one of its methods and every parameter of that method. " +
			"The device does not acknowledge commands; the result reports the state it sends back.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{` +
			`"device_id":{"type":"string","description":"the device_id from search_devices"},` +
			`"commands":{"type":"array","minItems":1,"items":{"type":"object","properties":{` +
			`"name":{"type":"string","description":"thing name, e.g. Lamp"},` +
			`"method":{"type":"string","description":"method name, e.g. TurnOn"},` +
			`"parameters":{"type":"object","description":"every parameter of the method"}},"required":["name","method"]}}},` +
			`"required":["device_id","commands"]}`),
	},
}

// HubTools returns the hub's tools for a mode: search_devices and
// get_device when device tools are offered directly, all four otherwise.
func HubTools(direct bool) []Tool {
	names := []string{ToolSearchDevices, ToolGetDevice}
	if !direct {
		names = append(names, ToolCallDeviceTool, ToolSendIoTCommands)
	}
	out := make([]Tool, 0, len(names))
	for _, n := range names {
		out = append(out, hubTools[n])
	}
	return out
}

// fixedOnly reports whether a hub tool is offered only when device tools
// are not offered directly (many devices).
func fixedOnly(name string) bool { return name == ToolCallDeviceTool || name == ToolSendIoTCommands }

func hubTool(name string) (Tool, bool) {
	t, ok := hubTools[name]
	return t, ok
}

package sim

import (
	"encoding/json"
	"strconv"
	"strings"
)

// Legacy IoT things of firmware ≤ 1.7 (docs/protocol.md §9), with the descriptions of the
// firmware's things/*.cc. Definitions are shared; state lives in the Device.

type iotValue struct{ name, desc, typ string } // typ: "number", "boolean", "string"

type iotProp struct {
	iotValue
	get func(d *Device) string // JSON value; d.mu is held
}

type iotMethod struct {
	name, desc string
	params     []iotValue
	run        func(d *Device, p map[string]any) // d.mu is held
}

type thing struct {
	name, desc string
	props      []iotProp
	methods    []iotMethod
}

func volumeProp(desc string) iotProp {
	return iotProp{iotValue{"volume", desc, "number"}, func(d *Device) string { return strconv.Itoa(d.volume) }}
}

func powerProp(desc string) iotProp {
	return iotProp{iotValue{"power", desc, "boolean"}, func(d *Device) string { return strconv.FormatBool(d.lampOn) }}
}

// setVolume is codec->SetOutputVolume(static_cast<uint8_t>(volume)).
func setVolume(d *Device, p map[string]any) { d.volume = int(uint8(p["volume"].(int))) }

func setLamp(on bool) func(*Device, map[string]any) {
	return func(d *Device, _ map[string]any) { d.lampOn = on }
}

var classicThings = []*thing{
	{name: "Speaker", desc: "当前 AI 机器人的扬声器",
		props: []iotProp{volumeProp("当前音量值")},
		methods: []iotMethod{{"SetVolume", "设置音量",
			[]iotValue{{"volume", "0到100之间的整数", "number"}}, setVolume}}},
	{name: "Lamp", desc: "一个测试用的灯",
		props: []iotProp{powerProp("灯是否打开")},
		methods: []iotMethod{
			{"TurnOn", "打开灯", nil, setLamp(true)},
			{"TurnOff", "关闭灯", nil, setLamp(false)}}},
}

var v177Things = []*thing{
	{name: "AudioSpeaker", desc: "The audio speaker of the device",
		props: []iotProp{volumeProp("Current audio volume value")},
		methods: []iotMethod{{"set_volume", "Set the audio volume",
			[]iotValue{{"volume", "An integer between 0 and 100", "number"}}, setVolume}}},
	{name: "Screen", desc: "A screen that can set theme and brightness",
		props: []iotProp{
			{iotValue{"theme", "Current theme", "string"}, func(d *Device) string { return quote(d.theme) }},
			{iotValue{"brightness", "Current brightness percentage", "number"}, func(d *Device) string { return strconv.Itoa(d.brightness) }}},
		methods: []iotMethod{
			{"set_theme", "Set the screen theme",
				[]iotValue{{"theme_name", "Valid string values are 'light' and 'dark'", "string"}},
				func(d *Device, p map[string]any) {
					if t := p["theme_name"].(string); t == "light" || t == "dark" {
						d.theme = t // other names are logged and ignored
					}
				}},
			{"set_brightness", "Set the brightness",
				[]iotValue{{"brightness", "An integer between 0 and 100", "number"}},
				func(d *Device, p map[string]any) { d.brightness = min(int(uint8(p["brightness"].(int))), 100) }}}},
	{name: "Lamp", desc: "A test lamp",
		props: []iotProp{powerProp("Whether the lamp is on")},
		methods: []iotMethod{
			{"turn_on", "Turn on the lamp", nil, setLamp(true)},
			{"turn_off", "Turn off the lamp", nil, setLamp(false)}}},
	{name: "Battery", desc: "The battery of the device",
		props: []iotProp{
			{iotValue{"level", "Current battery level", "number"}, func(d *Device) string { return strconv.Itoa(d.battery) }},
			{iotValue{"charging", "Whether the battery is charging", "boolean"}, func(*Device) string { return "false" }}}},
}

func (d *Device) things() []*thing {
	if d.cfg.IoTThings == ThingsV177 {
		return v177Things
	}
	return classicThings
}

func (v iotValue) descriptor() string {
	return quote(v.name) + `:{"description":` + quote(v.desc) + `,"type":"` + v.typ + `"}`
}

// descriptorJSON is Thing::GetDescriptorJson.
func (t *thing) descriptorJSON() string {
	var b strings.Builder
	b.WriteString(`{"name":` + quote(t.name) + `,"description":` + quote(t.desc) + `,"properties":{`)
	for i, p := range t.props {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(p.descriptor())
	}
	b.WriteString(`},"methods":{`)
	for i, m := range t.methods {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(quote(m.name) + `:{"description":` + quote(m.desc) + `,"parameters":{`)
		for j, p := range m.params {
			if j > 0 {
				b.WriteByte(',')
			}
			b.WriteString(p.descriptor())
		}
		b.WriteString(`}}`)
	}
	b.WriteString(`}}`)
	return b.String()
}

// stateJSON is Thing::GetStateJson; d.mu must be held.
func (t *thing) stateJSON(d *Device) string {
	var b strings.Builder
	b.WriteString(`{"name":` + quote(t.name) + `,"state":{`)
	for i, p := range t.props {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(quote(p.name) + ":" + p.get(d))
	}
	b.WriteString(`}}`)
	return b.String()
}

// sendIoTOpen is OnAudioChannelOpened for IoT firmware (§9): descriptors,
// one thing per message with "update":true (since v1.4.6), then the full
// states in one message.
//
// Upstream ThingManager::GetStatesJson(false) returns false and does not
// fill its delta cache, so stock 1.x sends the full list on the first entry
// into listening instead (which follows the hello at once on a real device).
// The sim sends it right after the descriptors, as §9 describes, and
// remembers it, so later deltas carry only what changed.
func (d *Device) sendIoTOpen(l *link) {
	for _, t := range d.things() {
		_ = d.sendText(l, []byte(`{"session_id":"`+d.SessionID()+`","type":"iot","update":true,"descriptors":[`+t.descriptorJSON()+`]}`))
	}
	d.sendIoTStates(l, false)
}

// sendIoTStates sends all states, or with delta only the things whose
// state JSON differs from what was last sent (nothing if none did).
func (d *Device) sendIoTStates(l *link, delta bool) {
	d.mu.Lock()
	if d.lastStates == nil {
		d.lastStates = make(map[string]string)
	}
	var parts []string
	for _, t := range d.things() {
		s := t.stateJSON(d)
		if delta && d.lastStates[t.name] == s {
			continue
		}
		d.lastStates[t.name] = s
		parts = append(parts, s)
	}
	sid := d.sessionID
	d.mu.Unlock()
	if len(parts) == 0 {
		return
	}
	_ = d.sendText(l, []byte(`{"session_id":"`+sid+`","type":"iot","update":true,"states":[`+strings.Join(parts, ",")+`]}`))
}

// onIoTCommands applies {"type":"iot","commands":[…]} (§9). Nothing is
// replied; methods run on the main loop, then the device enters listening
// as after a turn, which sends the changed states and "listen start".
func (d *Device) onIoTCommands(l *link, root map[string]json.RawMessage) {
	var cmds []json.RawMessage
	if json.Unmarshal(item(root, "commands"), &cmds) != nil {
		d.log.Warn("sim: iot message without a commands array, ignored")
		return
	}
	for _, c := range cmds {
		if run, vals := d.parseCommand(c); run != nil {
			d.loop.schedule(func() {
				d.mu.Lock()
				run(d, vals)
				d.mu.Unlock()
			})
		}
	}
	d.loop.schedule(func() { d.enterListening(l) })
}

// parseCommand is ThingManager::Invoke + Thing::Invoke. Where the firmware
// would crash (missing name/method, non-string for a string parameter) the
// sim logs and skips the command.
func (d *Device) parseCommand(raw json.RawMessage) (func(*Device, map[string]any), map[string]any) {
	cmd, _ := object(raw)
	name, ok := str(item(cmd, "name"))
	if !ok {
		d.log.Warn("sim: iot command without a name (the firmware would crash)")
		return nil, nil
	}
	var th *thing
	for _, t := range d.things() {
		if t.name == name {
			th = t
		}
	}
	if th == nil {
		d.log.Warn("sim: iot command for an unknown thing, ignored", "thing", name)
		return nil, nil
	}
	method, _ := str(item(cmd, "method"))
	var m *iotMethod
	for i := range th.methods {
		if th.methods[i].name == method {
			m = &th.methods[i]
		}
	}
	if m == nil {
		d.log.Warn("sim: Method not found", "thing", name, "method", method)
		return nil, nil
	}
	params, _ := object(item(cmd, "parameters"))
	vals := make(map[string]any, len(m.params))
	for _, p := range m.params {
		v := item(params, p.name)
		if v == nil {
			d.log.Warn("sim: iot parameter is required", "thing", name, "method", method, "parameter", p.name)
			return nil, nil
		}
		switch p.typ {
		case "number": // valueint: numbers truncated, true is 1, anything else 0
			vals[p.name] = valueInt(v)
		case "boolean":
			vals[p.name] = valueInt(v) == 1
		case "string":
			s, ok := str(v)
			if !ok {
				d.log.Warn("sim: non-string for a string parameter (the firmware would crash)", "parameter", p.name)
				return nil, nil
			}
			vals[p.name] = s
		}
	}
	return m.run, vals
}

// valueInt is cJSON's valueint for any item.
func valueInt(v json.RawMessage) int {
	if f, ok := number(v); ok {
		return cInt(f)
	}
	if kind(v) == 't' {
		return 1
	}
	return 0
}

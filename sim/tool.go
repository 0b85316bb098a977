package sim

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
)

// PropType is the type of a tool property. The firmware knows only these
// three (docs/protocol.md §8.4).
type PropType string

// Property types.
const (
	TypeBoolean PropType = "boolean"
	TypeInteger PropType = "integer"
	TypeString  PropType = "string"
)

// Prop is one tool argument, as the firmware's Property: a name, a type,
// an optional default (which makes it optional) and, for integers, an
// optional range. Properties carry no description on the wire.
type Prop struct {
	Name         string
	Type         PropType
	DefaultValue any // nil: required; otherwise bool, int or string matching Type
	HasRange     bool
	Min, Max     int
}

// Bool returns a required boolean property.
func Bool(name string) Prop { return Prop{Name: name, Type: TypeBoolean} }

// Int returns a required integer property.
func Int(name string) Prop { return Prop{Name: name, Type: TypeInteger} }

// String returns a required string property.
func String(name string) Prop { return Prop{Name: name, Type: TypeString} }

// Default makes p optional with default v (bool, int or string).
func (p Prop) Default(v any) Prop { p.DefaultValue = v; return p }

// Range limits an integer property to min..max (inclusive).
func (p Prop) Range(min, max int) Prop { p.HasRange, p.Min, p.Max = true, min, max; return p }

// Args are a tool call's arguments: every declared property, with its
// default when the call did not give a valid value. Values are bool, int
// (JSON numbers truncated, §8.5) or string.
type Args map[string]any

// Int returns the integer argument name.
func (a Args) Int(name string) int { v, _ := a[name].(int); return v }

// Bool returns the boolean argument name.
func (a Args) Bool(name string) bool { v, _ := a[name].(bool); return v }

// String returns the string argument name.
func (a Args) String(name string) string { v, _ := a[name].(string); return v }

// Handler runs a tool. ctx is cancelled when the connection ends; the device
// is [DeviceFrom](ctx). The result becomes content[0].text (§8.5): bool →
// "true"/"false", integers → decimal, string as is, json.RawMessage and any
// other value → compact JSON; an [Image] becomes the firmware's image
// content. An error becomes a JSON-RPC error carrying only its message.
type Handler func(ctx context.Context, args Args) (any, error)

// Image is an image result, sent with the firmware's non-standard nesting
// {"type":"image","image":"<stringified {type,mimeType,data}>"} (§8.5).
type Image struct {
	MimeType string
	Data     []byte
}

// Tool is an MCP tool offered by a device. A Tool may be shared by many
// devices and must not be modified once added.
type Tool struct {
	Name        string
	Description string
	Props       []Prop
	UserOnly    bool    // hidden unless withUserTools, annotated audience ["user"]
	Handler     Handler // nil returns true
	// RawSchema, when set, is sent as the inputSchema instead of the one
	// built from Props. The firmware never does this; tests use it to play
	// a hostile device (see HostileSchemaTool).
	RawSchema string

	once sync.Once
	js   string
}

// JSON returns the tool as the firmware lists it (McpTool::to_json, §8.4):
// name, description, inputSchema {type, properties, required}, and for
// user-only tools annotations {audience:["user"]}, in that key order.
func (t *Tool) JSON() string {
	t.once.Do(func() {
		var b strings.Builder
		b.WriteString(`{"name":` + quote(t.Name) + `,"description":` + quote(t.Description))
		if t.RawSchema != "" {
			b.WriteString(`,"inputSchema":` + t.RawSchema + `}`)
			t.js = b.String()
			return
		}
		b.WriteString(`,"inputSchema":{"type":"object","properties":{`)
		var required []string
		for i, p := range t.Props {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(quote(p.Name) + `:{"type":"` + string(p.Type) + `"`)
			if p.DefaultValue != nil {
				b.WriteString(`,"default":` + string(marshal(p.DefaultValue)))
			} else {
				required = append(required, p.Name)
			}
			if p.HasRange {
				b.WriteString(`,"minimum":` + strconv.Itoa(p.Min) + `,"maximum":` + strconv.Itoa(p.Max))
			}
			b.WriteByte('}')
		}
		b.WriteByte('}')
		if len(required) > 0 { // key omitted when empty
			b.WriteString(`,"required":` + string(marshal(required)))
		}
		b.WriteByte('}')
		if t.UserOnly {
			b.WriteString(`,"annotations":{"audience":["user"]}`)
		}
		b.WriteByte('}')
		t.js = b.String()
	})
	return t.js
}

// validate checks what the firmware's Property constructors enforce.
func (t *Tool) validate() error {
	if t.Name == "" {
		return errors.New("sim: tool without a name")
	}
	for _, p := range t.Props {
		switch p.Type {
		case TypeBoolean, TypeInteger, TypeString:
		default:
			return fmt.Errorf("sim: tool %s: property %s has type %q; the firmware knows boolean, integer and string", t.Name, p.Name, p.Type)
		}
		if p.HasRange && p.Type != TypeInteger {
			return fmt.Errorf("sim: tool %s: range on non-integer property %s", t.Name, p.Name)
		}
		if p.DefaultValue == nil {
			continue
		}
		var ok bool
		switch p.Type {
		case TypeBoolean:
			_, ok = p.DefaultValue.(bool)
		case TypeInteger:
			var v int
			v, ok = p.DefaultValue.(int)
			if ok && p.HasRange && (v < p.Min || v > p.Max) {
				return fmt.Errorf("sim: tool %s: default of %s outside %d..%d", t.Name, p.Name, p.Min, p.Max)
			}
		case TypeString:
			_, ok = p.DefaultValue.(string)
		}
		if !ok {
			return fmt.Errorf("sim: tool %s: default of %s is %T, not %s", t.Name, p.Name, p.DefaultValue, p.Type)
		}
	}
	return nil
}

// AddTool registers tools. As on the firmware (§8.4 tool order), AI-visible
// tools go before the user-only ones; user-only tools are appended. A name
// already registered is an error (the firmware logs and ignores it). Tools
// added after Connect are listed on the next tools/list; see
// NotifyToolsChanged.
func (d *Device) AddTool(tools ...*Tool) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, t := range tools {
		if err := t.validate(); err != nil {
			return err
		}
		if d.findTool(t.Name) != nil {
			return fmt.Errorf("sim: tool %s already added", t.Name)
		}
		at := len(d.tools)
		if !t.UserOnly {
			for i, u := range d.tools {
				if u.UserOnly {
					at = i
					break
				}
			}
		}
		d.tools = append(d.tools, nil)
		copy(d.tools[at+1:], d.tools[at:])
		d.tools[at] = t
	}
	return nil
}

// RemoveTool unregisters a tool and reports whether it existed.
func (d *Device) RemoveTool(name string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	for i, t := range d.tools {
		if t.Name == name {
			d.tools = append(d.tools[:i:i], d.tools[i+1:]...)
			return true
		}
	}
	return false
}

// ToolNames returns the registered tool names in registration order.
func (d *Device) ToolNames() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	names := make([]string, len(d.tools))
	for i, t := range d.tools {
		names[i] = t.Name
	}
	return names
}

// NotifyToolsChanged sends {"jsonrpc":"2.0","method":"notifications/tools/list_changed"}.
//
// EXTENSION: firmware 2.4.2 never sends any notification (§8.5); this
// exists only to test how the hub handles one.
func (d *Device) NotifyToolsChanged() error {
	l, err := d.current()
	if err != nil {
		return err
	}
	return d.sendText(l, d.envelope(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`))
}

// findTool returns the tool called name; d.mu must be held.
func (d *Device) findTool(name string) *Tool {
	for _, t := range d.tools {
		if t.Name == name {
			return t
		}
	}
	return nil
}

type ctxKey struct{}

// DeviceFrom returns the device running a tool handler.
func DeviceFrom(ctx context.Context) *Device {
	if c, ok := ctx.Value(ctxKey{}).(*callCtx); ok {
		return c.d
	}
	return nil
}

// linkFrom returns the connection a tool call arrived on.
func linkFrom(ctx context.Context) *link {
	if c, ok := ctx.Value(ctxKey{}).(*callCtx); ok {
		return c.l
	}
	return nil
}

// toolResult builds the tools/call result (McpTool::Call, §8.5).
func toolResult(v any) string {
	type text struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	type image struct {
		Type  string `json:"type"`
		Image string `json:"image"`
	}
	var content any
	switch x := v.(type) {
	case Image:
		inner := marshal(struct {
			Type     string `json:"type"`
			MimeType string `json:"mimeType"`
			Data     string `json:"data"`
		}{"image", x.MimeType, base64.StdEncoding.EncodeToString(x.Data)})
		content = image{"image", string(inner)}
	default:
		content = text{"text", resultText(v)}
	}
	return string(marshal(struct {
		Content []any `json:"content"`
		IsError bool  `json:"isError"`
	}{[]any{content}, false}))
}

func resultText(v any) string {
	switch x := v.(type) {
	case bool:
		return strconv.FormatBool(x)
	case int:
		return strconv.Itoa(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case int32:
		return strconv.FormatInt(int64(x), 10)
	case string:
		return x
	case json.RawMessage:
		var c bytes.Buffer
		if json.Compact(&c, x) == nil { // compacts without HTML escaping
			return c.String()
		}
		return string(x)
	default:
		return string(marshal(v))
	}
}

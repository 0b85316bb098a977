package protocol

import (
	"encoding/json"
	"fmt"

	"github.com/xiaozhi-hub/hub"
)

// ThingDescriptor describes one legacy IoT thing (firmware ≤ 1.7).
type ThingDescriptor struct {
	Name        string                `json:"name"`
	Description string                `json:"description"`
	Properties  map[string]Property   `json:"properties"`
	Methods     map[string]MethodDesc `json:"methods"`
}

// Property is a readable value of a thing.
type Property struct {
	Description string `json:"description"`
	Type        string `json:"type"` // "boolean", "number" or "string"
}

// MethodDesc is a callable method of a thing.
type MethodDesc struct {
	Description string              `json:"description"`
	Parameters  map[string]Property `json:"parameters"`
}

// ThingState is the state of one thing as reported by the device.
type ThingState struct {
	Name  string                     `json:"name"`
	State map[string]json.RawMessage `json:"state"`
}

// IoTMessage is a device's "iot" frame: descriptors, states, or both.
type IoTMessage struct {
	Update      bool
	Descriptors []ThingDescriptor
	States      []ThingState
}

// DecodeIoT decodes an "iot" frame. Entries without a name are an error:
// the hub keys things by name.
func DecodeIoT(raw []byte) (IoTMessage, error) {
	var fields struct {
		Update      json.RawMessage   `json:"update"`
		Descriptors []json.RawMessage `json:"descriptors"`
		States      []json.RawMessage `json:"states"`
	}
	if err := json.Unmarshal(raw, &fields); err != nil {
		return IoTMessage{}, fmt.Errorf("%w: iot: %v", ErrMalformed, err)
	}
	var m IoTMessage
	_ = json.Unmarshal(fields.Update, &m.Update)
	for i, d := range fields.Descriptors {
		var td ThingDescriptor
		if err := json.Unmarshal(d, &td); err != nil {
			return IoTMessage{}, fmt.Errorf("%w: iot descriptor %d: %v", ErrMalformed, i, err)
		}
		if td.Name == "" {
			return IoTMessage{}, fmt.Errorf("%w: iot descriptor %d has no name", ErrMalformed, i)
		}
		m.Descriptors = append(m.Descriptors, td)
	}
	for i, s := range fields.States {
		var ts ThingState
		if err := json.Unmarshal(s, &ts); err != nil {
			return IoTMessage{}, fmt.Errorf("%w: iot state %d: %v", ErrMalformed, i, err)
		}
		if ts.Name == "" {
			return IoTMessage{}, fmt.Errorf("%w: iot state %d has no name", ErrMalformed, i)
		}
		m.States = append(m.States, ts)
	}
	if len(m.Descriptors) == 0 && len(m.States) == 0 {
		return m, fmt.Errorf("%w: iot message has neither descriptors nor states", ErrMalformed)
	}
	return m, nil
}

// EncodeIoTCommands builds the command frame for a legacy device.
func EncodeIoTCommands(sessionID string, cmds []hub.IoTCommand) ([]byte, error) {
	return json.Marshal(struct {
		SessionID string       `json:"session_id"`
		Type      string       `json:"type"`
		Commands  []hub.IoTCommand `json:"commands"`
	}{sessionID, TypeIoT, cmds})
}

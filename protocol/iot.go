package protocol

import (
	"encoding/json"
	"fmt"

	"github.com/xiaozhi-hub/hub"
)

// ThingState is the state of one thing as reported by the device.
type ThingState struct {
	Name  string                     `json:"name"`
	State map[string]json.RawMessage `json:"state"`
}

// IoTMessage is a device's "iot" frame: descriptors, states, or both.
// Descriptors decode straight into hub.Thing (their JSON shapes match).
type IoTMessage struct {
	Update      bool
	Descriptors []hub.Thing
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
		var td hub.Thing
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
		SessionID string           `json:"session_id"`
		Type      string           `json:"type"`
		Commands  []hub.IoTCommand `json:"commands"`
	}{sessionID, TypeIoT, cmds})
}

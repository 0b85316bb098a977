package iot_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/iot"
)

func speaker() *hub.Thing {
	return &hub.Thing{
		Name:       "Speaker",
		Properties: map[string]hub.ThingProperty{"volume": {Type: "number"}},
		Methods: map[string]hub.ThingMethod{
			"SetVolume": {Parameters: map[string]hub.ThingProperty{"volume": {Type: "number"}}},
		},
	}
}

func TestMergeStateFullThenDelta(t *testing.T) {
	th := speaker()
	now := time.Now()
	if ch := iot.MergeState(th, map[string]json.RawMessage{"volume": json.RawMessage("80")}, now); len(ch) != 1 {
		t.Fatalf("first report changes volume, got %v", ch)
	}
	if ch := iot.MergeState(th, map[string]json.RawMessage{"volume": json.RawMessage("80")}, now); len(ch) != 0 {
		t.Fatalf("same value is no change, got %v", ch)
	}
	iot.MergeState(th, map[string]json.RawMessage{"muted": json.RawMessage("true")}, now)
	if string(th.State["volume"]) != "80" || string(th.State["muted"]) != "true" {
		t.Fatalf("a delta must keep earlier values: %v", th.State)
	}
}

func TestDescribeReplacesAndKeepsState(t *testing.T) {
	old := speaker()
	old.State = map[string]json.RawMessage{"volume": json.RawMessage("30"), "gone": json.RawMessage("1")}
	desc := *speaker()
	desc.Description = "new"
	got := iot.Describe(desc, old)
	if got.Description != "new" || string(got.State["volume"]) != "30" {
		t.Fatalf("re-sent descriptor must replace the description and keep state: %+v", got)
	}
	if _, ok := got.State["gone"]; ok {
		t.Fatal("state of a property the new descriptor dropped must go")
	}
}

func TestValidateCommands(t *testing.T) {
	things := map[string]*hub.Thing{"Speaker": speaker()}
	ok := []hub.IoTCommand{{Name: "Speaker", Method: "SetVolume", Parameters: json.RawMessage(`{"volume":50}`)}}
	if err := iot.ValidateCommands(things, ok); err != nil {
		t.Fatal(err)
	}
	bad := map[string]hub.IoTCommand{
		"unknown thing":     {Name: "Fan", Method: "On"},
		"unknown method":    {Name: "Speaker", Method: "Mute"},
		"missing param":     {Name: "Speaker", Method: "SetVolume", Parameters: json.RawMessage(`{}`)},
		"string for num":    {Name: "Speaker", Method: "SetVolume", Parameters: json.RawMessage(`{"volume":"50"}`)},
		"object for num":    {Name: "Speaker", Method: "SetVolume", Parameters: json.RawMessage(`{"volume":{}}`)},
		"extra param":       {Name: "Speaker", Method: "SetVolume", Parameters: json.RawMessage(`{"volume":5,"x":1}`)},
		"params not object": {Name: "Speaker", Method: "SetVolume", Parameters: json.RawMessage(`[1]`)},
	}
	for name, c := range bad {
		err := iot.ValidateCommands(things, []hub.IoTCommand{c})
		if hub.ErrorCode(err) != hub.EINVALID || !strings.Contains(err.Error(), "command 0") {
			t.Errorf("%s: want EINVALID naming the command, got %v", name, err)
		}
	}
	if err := iot.ValidateCommands(things, nil); hub.ErrorCode(err) != hub.EINVALID {
		t.Error("no commands must be refused")
	}
}

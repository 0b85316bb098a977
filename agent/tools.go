package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/catalog"
)

// runTools runs the tool calls of one model answer, in parallel, and
// returns their results in the order of the calls. Every call gets a
// result: failures are results with IsError, for the model to read.
func (a *Agent) runTools(ctx context.Context, step int, calls []ToolCall, send func(Event), rec *RunRecord) []ToolResult {
	results := make([]ToolResult, len(calls))
	records := make([]CallRecord, len(calls))
	for _, c := range calls {
		e := Event{Type: EventToolCall, Step: step, ID: c.ID, Name: c.Name, Arguments: displayArgs(c.Input)}
		if t, ok := a.cat.Lookup(ctx, c.Name); ok && t.Kind != catalog.KindHub {
			e.DeviceID, e.Target = t.DeviceID, t.Target
		}
		send(e)
	}
	var wg sync.WaitGroup
	for i, c := range calls {
		wg.Go(func() {
			start := time.Now()
			r := a.callTool(ctx, c)
			d := ms(time.Since(start))
			results[i] = ToolResult{CallID: c.ID, Name: c.Name, Content: r.Text, IsError: r.IsError}
			outcome := hub.OutcomeOK
			if r.IsError {
				outcome = r.Code
			}
			records[i] = CallRecord{Step: step, ID: c.ID, Name: c.Name, DeviceID: r.DeviceID, Target: r.Target,
				Arguments: hub.Truncate(c.Input, 512), Result: hub.Truncate([]byte(r.Text), 512),
				Outcome: outcome, DurationMs: d}
			send(Event{Type: EventToolResult, Step: step, ID: c.ID, Name: c.Name, DeviceID: r.DeviceID, Target: r.Target,
				IsError: r.IsError, Code: r.Code, Content: hub.Truncate([]byte(r.Text), 2048), DurationMs: d})
		})
	}
	wg.Wait()
	rec.Calls = append(rec.Calls, records...)
	return results
}

// callTool runs one call. Arguments that are not a JSON object never reach
// a device.
func (a *Agent) callTool(ctx context.Context, c ToolCall) catalog.Result {
	in := bytes.TrimSpace(c.Input)
	if len(in) == 0 {
		in = []byte("{}")
	}
	if !json.Valid(in) || in[0] != '{' {
		return catalog.Result{IsError: true, Code: hub.EINVALID,
			Text: fmt.Sprintf("%s: the arguments of %s must be a JSON object matching its input schema, got %s",
				hub.EINVALID, c.Name, hub.Truncate(in, 200))}
	}
	if ctx.Err() != nil {
		return catalog.Result{IsError: true, Code: hub.ETIMEOUT, Text: hub.ETIMEOUT + ": the run is out of time; the tool was not called"}
	}
	return a.cat.Call(ctx, c.Name, in)
}

// displayArgs returns arguments for an event: the JSON as written, or a
// JSON string when the model wrote something that is not JSON.
func displayArgs(in json.RawMessage) json.RawMessage {
	if json.Valid(in) {
		return in
	}
	b, _ := json.Marshal(string(in))
	return b
}

// maxContextDevices bounds the device list in the system prompt.
const maxContextDevices = 40

// systemPrompt tells the model what it is and which devices exist: those
// the principal in ctx sees.
func (a *Agent) systemPrompt(ctx context.Context, direct bool, speaker string) string {
	devs := a.cat.Devices(ctx)
	online := 0
	for _, d := range devs {
		if d.Online {
			online++
		}
	}
	var b strings.Builder
	b.WriteString("You are the assistant of a xiaozhi-hub, which controls voice devices and smart-home gadgets through tools.\n")
	b.WriteString("Act with the tools; never claim an action you did not perform. When a tool returns an error, read it: fix the arguments and try again, or tell the user what went wrong.\n")
	if direct {
		b.WriteString("Each device's tools are offered directly; their descriptions start with the device's name and room. Use search_devices when unsure which device is meant.\n")
	} else {
		b.WriteString("There are many devices: find them with search_devices (query with the room and kind of device, e.g. \"客厅 灯\"), then call their tools with call_device_tool (or send_iot_commands for legacy IoT things).\n")
	}
	b.WriteString("After acting, answer briefly in the user's language and say what you did.\n")
	if speaker != "" {
		name := "with id " + speaker
		for _, d := range devs {
			if d.ID == speaker && d.Name != "" {
				name = d.Name + " (id " + speaker + ")"
			}
		}
		fmt.Fprintf(&b, "The user is speaking aloud to the device %s, which reads your answer aloud: \"this device\", \"you\", \"here\" and requests without a device (louder, brighter, quieter) mean that device. Answer in one or two short spoken sentences, without lists, markdown or emoji.\n", name)
	}
	fmt.Fprintf(&b, "Current time: %s.\n", a.cfg.Now().Format(time.RFC3339))
	fmt.Fprintf(&b, "Devices (%d known, %d online):\n", len(devs), online)
	for i, d := range devs {
		if i == maxContextDevices {
			fmt.Fprintf(&b, "… and %d more (use search_devices)\n", len(devs)-i)
			break
		}
		name := d.Name
		if name == "" {
			name = "(unnamed)"
		}
		state := "offline"
		if d.Online {
			state = "online"
		}
		room := d.Room
		if room == "" {
			room = "no room"
		}
		fmt.Fprintf(&b, "- %s (%s, id %s, %s)\n", name, room, d.ID, state)
	}
	a.describeServices(ctx, &b)
	return b.String()
}

// describeServices lists the services the principal in ctx sees, for the
// system prompt: the model reaches their tools as it reaches devices'.
func (a *Agent) describeServices(ctx context.Context, b *strings.Builder) {
	svcs := a.cat.Services(ctx)
	if len(svcs) == 0 {
		return
	}
	fmt.Fprintf(b, "Services (outside tools beside the devices; search_devices finds them too, as device_id %s<name>):\n", catalog.ServicePrefix)
	for i, s := range svcs {
		if i == maxContextDevices {
			fmt.Fprintf(b, "… and %d more (use search_devices)\n", len(svcs)-i)
			break
		}
		state := "offline"
		if s.Online {
			state = "online"
		}
		fmt.Fprintf(b, "- %s (%d tools, %s)\n", s.Name, len(s.Tools), state)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

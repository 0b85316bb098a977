package sim

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Ready-made tools for tests of the hub.

// SlowTool returns a tool that sleeps for d (or until the connection ends)
// and then returns "done". While it runs, the device's main loop is busy,
// so later replies wait, as on the firmware (docs/protocol.md §12.13).
func SlowTool(name string, d time.Duration) *Tool {
	return &Tool{
		Name:        name,
		Description: fmt.Sprintf("Takes %v to answer.", d),
		Handler: func(ctx context.Context, _ Args) (any, error) {
			t := time.NewTimer(d)
			defer t.Stop()
			select {
			case <-t.C:
				return "done", nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		},
	}
}

// FailingTool returns a tool whose handler fails with message; the device
// answers with a JSON-RPC error carrying only that message.
func FailingTool(name, message string) *Tool {
	return &Tool{
		Name:        name,
		Description: "Always fails.",
		Handler: func(context.Context, Args) (any, error) {
			return nil, errors.New(message)
		},
	}
}

// FillerTools returns n tools named prefix.000, prefix.001, … each with a
// description of descLen bytes and one optional integer argument, to make
// tools/list span several pages.
func FillerTools(prefix string, n, descLen int) []*Tool {
	tools := make([]*Tool, n)
	for i := range tools {
		tools[i] = &Tool{
			Name:        fmt.Sprintf("%s.%03d", prefix, i),
			Description: filler(descLen),
			Props:       []Prop{Int("level").Default(1).Range(0, 10)},
			Handler: func(_ context.Context, a Args) (any, error) {
				return a.Int("level"), nil
			},
		}
	}
	return tools
}

// BigTool returns a tool whose description is descLen bytes long. Above
// about 7900 bytes it fits no tools/list page, and the device answers
// "Failed to add tool <name> because of payload size limit" (§8.4).
func BigTool(name string, descLen int) *Tool {
	return &Tool{Name: name, Description: filler(descLen)}
}

func filler(n int) string {
	const words = "lorem ipsum dolor sit amet "
	return strings.Repeat(words, n/len(words)+1)[:n]
}

// HostileSchemaTool returns a tool that lists schema (raw JSON) as its
// inputSchema and answers every call with "called", as a hostile or buggy
// device might: a $ref bomb, a schema nested thousands deep, or a $ref to a
// file on the hub's machine.
func HostileSchemaTool(name, schema string) *Tool {
	return &Tool{
		Name:        name,
		Description: "A tool with a hostile inputSchema.",
		RawSchema:   schema,
		Handler:     func(context.Context, Args) (any, error) { return "called", nil },
	}
}

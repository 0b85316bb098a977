package mcpclient_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/xiaozhi-hub/hub/mcpclient"
	"github.com/xiaozhi-hub/hub/protocol"
)

// A Client speaks to one device through a Sender (what writes a payload to
// the device) and Deliver (what the connection's read loop calls with each
// reply). Here a goroutine plays a device that offers one tool.
func Example() {
	toDevice := make(chan []byte, 1)
	c := mcpclient.New(func(_ context.Context, payload []byte) error {
		toDevice <- payload
		return nil
	}, mcpclient.Options{})

	var device sync.WaitGroup
	device.Go(func() {
		for payload := range toDevice {
			var req struct {
				ID     *int64 `json:"id"`
				Method string `json:"method"`
			}
			json.Unmarshal(payload, &req)
			var result string
			switch req.Method {
			case "initialize":
				result = `{"protocolVersion":"2024-11-05","capabilities":{"tools":{}},"serverInfo":{"name":"esp-box-3","version":"2.4.2"}}`
			case "tools/list":
				result = `{"tools":[{"name":"self.light.set_power","description":"Turn the light on or off","inputSchema":{"type":"object","properties":{"on":{"type":"boolean"}},"required":["on"]}}]}`
			default:
				continue // notifications/initialized has no reply
			}
			r, err := protocol.DecodeRPC(fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"result":%s}`, *req.ID, result))
			if err != nil {
				panic(err)
			}
			c.Deliver(r)
		}
	})
	defer device.Wait()
	defer close(toDevice)

	ctx := context.Background()
	info, err := c.Initialize(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	tools, err := c.ListTools(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(info.Name, info.Version)
	for _, t := range tools {
		fmt.Println(t.Name, "-", t.Description)
	}
	// Output:
	// esp-box-3 2.4.2
	// self.light.set_power - Turn the light on or off
}

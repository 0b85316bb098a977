package catalog

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/registry"
)

func (c *Catalog) callHub(ctx context.Context, name string, raw json.RawMessage) Result {
	switch name {
	case ToolSearchDevices:
		var a struct {
			Query *string `json:"query"`
			Limit int     `json:"limit"`
		}
		if err := decodeArgs(raw, &a); err != nil {
			return errResult(err)
		}
		if a.Query == nil {
			return errResult(hub.Errorf(hub.EINVALID, "query is required, e.g. {\"query\":\"客厅 灯\"}; use \"\" to list devices"))
		}
		if a.Limit < 0 || a.Limit > 20 {
			return errResult(hub.Errorf(hub.EINVALID, "limit must be between 1 and 20, got %d", a.Limit))
		}
		return jsonResult(c.Search(ctx, *a.Query, a.Limit))
	case ToolGetDevice:
		var a struct {
			DeviceID string `json:"device_id"`
		}
		if err := decodeArgs(raw, &a); err != nil {
			return errResult(err)
		}
		if a.DeviceID == "" {
			return errResult(hub.Errorf(hub.EINVALID, "device_id is required (search_devices finds it)"))
		}
		d, err := c.Describe(ctx, a.DeviceID)
		if err != nil {
			return errResult(err)
		}
		return jsonResult(d)
	case ToolCallDeviceTool:
		var a struct {
			DeviceID  string          `json:"device_id"`
			Tool      string          `json:"tool"`
			Arguments json.RawMessage `json:"arguments"`
		}
		if err := decodeArgs(raw, &a); err != nil {
			return errResult(err)
		}
		if a.DeviceID == "" || a.Tool == "" {
			return errResult(hub.Errorf(hub.EINVALID, "device_id and tool are required"))
		}
		return c.CallDeviceTool(ctx, a.DeviceID, a.Tool, a.Arguments)
	case ToolSendIoTCommands:
		var a struct {
			DeviceID string           `json:"device_id"`
			Commands []hub.IoTCommand `json:"commands"`
		}
		if err := decodeArgs(raw, &a); err != nil {
			return errResult(err)
		}
		if a.DeviceID == "" {
			return errResult(hub.Errorf(hub.EINVALID, "device_id is required"))
		}
		r := c.sendIoT(ctx, a.DeviceID, a.Commands)
		r.DeviceID = a.DeviceID
		return r
	}
	return errResult(hub.Errorf(hub.ENOTFOUND, "no hub tool %q", name))
}

// decodeArgs decodes a JSON object strictly, so that a misspelt argument
// is reported rather than ignored.
func decodeArgs(raw json.RawMessage, v any) error {
	raw, err := registry.Arguments(raw)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		msg := strings.TrimPrefix(err.Error(), "json: ")
		return hub.Errorf(hub.EINVALID, "arguments do not match the tool's input schema: %s", msg)
	}
	return nil
}

func jsonResult(v any) Result {
	b, err := json.Marshal(v)
	if err != nil {
		return errResult(err)
	}
	return Result{Text: string(b)}
}

package session

import (
	"context"
	"encoding/json"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/protocol"
	"github.com/xiaozhi-hub/hub/registry"
)

var _ registry.Conn = (*session)(nil)

// CallTool sends tools/call to the device and waits for its answer.
func (s *session) CallTool(ctx context.Context, name string, args json.RawMessage) (hub.CallResult, error) {
	if s.client == nil {
		return hub.CallResult{}, hub.Errorf(hub.EINVALID, "device %q speaks the legacy IoT protocol, not MCP: use its IoT commands", s.id.DeviceID)
	}
	return s.client.CallTool(ctx, name, args)
}

// SendIoT writes legacy IoT commands. The device does not answer them.
func (s *session) SendIoT(ctx context.Context, cmds []hub.IoTCommand) error {
	data, err := protocol.EncodeIoTCommands(s.sid, cmds)
	if err != nil {
		return hub.Errorf(hub.EINVALID, "encode IoT commands: %w", err)
	}
	if err := s.write(ctx, data, "iot"); err != nil {
		return hub.Errorf(hub.EGONE, "sending IoT commands to the device failed: %w", err)
	}
	s.log.Info("iot commands sent", "count", len(cmds), "commands", hub.Truncate(data, 200))
	return nil
}

// Close ends the connection with a reason. It does not block: the close
// handshake runs on a goroutine owned by the Server.
func (s *session) Close(reason string) {
	s.closeReason.Store(&reason)
	s.srv.goOwned(func() {
		s.c.Close(ClosePolicy, reason)
	})
}

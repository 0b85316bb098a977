package session

import (
	"context"
	"fmt"
	"sync"

	"github.com/xiaozhi-hub/hub/protocol"
	"github.com/xiaozhi-hub/hub/registry"
)

// maxIoTBacklog bounds the IoT messages (bytes as received) that wait to
// be stored for one device. Firmware sends a few descriptors and states a
// conversation, far below it; past it, messages are dropped and recorded as
// bad input, and the device stays connected.
const maxIoTBacklog = 1 << 20

// iotQueue holds a device's IoT messages between the read loop, which
// decodes them, and the goroutine that stores them, in the order they came.
type iotQueue struct {
	mu      sync.Mutex
	msgs    []iotItem
	bytes   int
	running bool
}

type iotItem struct {
	msg  protocol.IoTMessage
	size int
}

// handleIoT decodes an IoT message on the read loop and hands it to the
// device's IoT goroutine (owned by the Server, started when needed), so
// that the read loop never waits for the store's commits.
func (s *session) handleIoT(data []byte) {
	msg, err := protocol.DecodeIoT(data)
	if err != nil {
		s.badInput("bad_iot", err)
		return
	}
	q := &s.iot
	q.mu.Lock()
	if q.bytes+len(data) > maxIoTBacklog {
		q.mu.Unlock()
		s.badInput("iot_backlog", fmt.Errorf("IoT message dropped: %d bytes of earlier ones still wait to be stored", q.bytes))
		return
	}
	q.msgs = append(q.msgs, iotItem{msg, len(data)})
	q.bytes += len(data)
	start := !q.running
	q.running = true
	q.mu.Unlock()
	if start {
		s.srv.goOwned(s.storeIoT)
	}
}

// storeIoT stores queued IoT messages until none is left. The writes
// ignore the connection's end (see persisting): what a device said before
// hanging up is kept.
func (s *session) storeIoT() {
	q := &s.iot
	for {
		q.mu.Lock()
		if len(q.msgs) == 0 {
			q.running = false
			q.msgs = nil
			q.mu.Unlock()
			return
		}
		it := q.msgs[0]
		q.msgs = q.msgs[1:]
		q.bytes -= it.size
		q.mu.Unlock()
		s.applyIoT(s.ctx, it.msg)
	}
}

func (s *session) applyIoT(ctx context.Context, msg protocol.IoTMessage) {
	ctx, cancel := persisting(ctx)
	defer cancel()
	if len(msg.Descriptors) > 0 {
		if err := s.link.DescribeThings(ctx, msg.Descriptors); err != nil {
			s.log.Error("could not store IoT descriptors", "err", err)
		}
		s.log.Debug("iot descriptors", "things", len(msg.Descriptors))
	}
	if len(msg.States) > 0 {
		states := make([]registry.ThingState, len(msg.States))
		for i, st := range msg.States {
			states[i] = registry.ThingState{Name: st.Name, State: st.State}
		}
		if err := s.link.ReportStates(ctx, states); err != nil {
			s.log.Error("could not store IoT states", "err", err)
		}
		s.log.Debug("iot states", "things", len(msg.States))
	}
}

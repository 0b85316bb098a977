package session

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/coder/websocket"
	"github.com/xiaozhi-hub/hub/protocol"
)

// wsConn is the WebSocket adapter of Connection: text frames are JSON
// messages, binary frames are Opus in the framing of the negotiated
// protocol version (docs/protocol.md §3.4), which stays in here.
//
// Writes are serialised by a mutex rather than handed to a writer
// goroutine with a queue: a goroutine and a queue per connection would
// cost every idle device a stack and a buffer (idle memory is a target of
// its own), and each message a hand-off between goroutines on the
// discovery and call paths. A write is a single frame into a 1 KiB buffer
// and a system call, bounded by its context; a slow device holds up only
// writers to itself.
type wsConn struct {
	c       *websocket.Conn
	version int        // binary framing; the header's until Negotiate
	ready   *readiness // the wait before a long-lived read (nil: none)

	wmu sync.Mutex // one frame at a time, whole
	// bound is the context of an answer's audio frames when their caller
	// set no deadline: one for the run of frames between two text
	// messages, renewed once it has less than half of maxWrite left, so
	// each frame's write is bounded by 5 to 10 s. A context a write would
	// otherwise be given, with its timer, was most of what a spoken turn
	// allocates for its 23 writes. A text message releases it (tts stop
	// ends every answer), so that a device that is not being answered
	// holds none. Guarded by wmu.
	bound    context.Context
	unbind   context.CancelFunc
	boundEnd time.Time
}

var (
	_ Connection = (*wsConn)(nil)
	_ pinger     = (*wsConn)(nil)
)

func newWSConn(c *websocket.Conn, headerVersion int, ready *readiness) *wsConn {
	return &wsConn{c: c, version: headerVersion, ready: ready}
}

func (w *wsConn) Read(ctx context.Context) (Message, error) {
	w.ready.wait(ctx)
	typ, data, err := w.c.Read(ctx)
	if err != nil {
		return Message{}, &EndError{Reason: describeEnd(err), Err: err}
	}
	if typ == websocket.MessageText {
		return Message{Kind: TextMessage, Text: data, Size: len(data)}, nil
	}
	m := Message{Kind: AudioMessage, Size: len(data)}
	f, err := protocol.ParseAudioFrame(w.version, data)
	if err != nil {
		m.Err = err
		return m, nil
	}
	m.Audio = AudioFrame{Data: f.Payload, Timestamp: f.Timestamp}
	return m, nil
}

// Negotiate fixes the binary framing: the hello's version when it is one
// the hub knows, else the Protocol-Version header's, else 1.
func (w *wsConn) Negotiate(_ string, h protocol.ClientHello) (Negotiated, error) {
	if v := h.Version; v >= 1 && v <= 3 {
		w.version = v
	}
	if w.version == 0 {
		w.version = 1
	}
	return Negotiated{Transport: "websocket", ProtocolVersion: w.version}, nil
}

func (w *wsConn) WriteText(ctx context.Context, data []byte) error {
	return w.write(ctx, websocket.MessageText, data)
}

func (w *wsConn) WriteAudio(ctx context.Context, f AudioFrame) error {
	return w.write(ctx, websocket.MessageBinary, protocol.AppendAudioFrame(nil, w.version, f.Timestamp, f.Data))
}

// maxWrite bounds a write whose context has no deadline: a device that
// stops reading is closed after it rather than holding its writer.
const maxWrite = 10 * time.Second

// write sends one message. The WebSocket library closes the whole
// connection when a write's context ends mid-write, so a turn that is
// aborted (its context cancelled) would take the device's connection with
// it: a write that starts is given the caller's deadline (or about
// maxWrite: bound) but not its cancellation, and a write whose context has
// already ended does not start. The library keeps the last write's
// context until the next write, for as long as the device stays silent:
// it gets a context of its own, not one that holds on to the caller's (a
// discovery request's, a turn's).
func (w *wsConn) write(ctx context.Context, typ websocket.MessageType, data []byte) error {
	w.wmu.Lock()
	defer w.wmu.Unlock()
	if err := ctx.Err(); err != nil {
		return err
	}
	deadline, ok := ctx.Deadline()
	if !ok && typ == websocket.MessageBinary {
		return w.c.Write(w.boundLocked(), typ, data)
	}
	if typ == websocket.MessageText {
		w.unbindLocked()
	}
	if !ok {
		deadline = time.Now().Add(maxWrite)
	}
	wctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	return w.c.Write(wctx, typ, data)
}

// boundLocked returns bound, renewed if it has less than maxWrite/2 left.
func (w *wsConn) boundLocked() context.Context {
	now := time.Now()
	if w.bound == nil || w.boundEnd.Sub(now) < maxWrite/2 {
		w.unbindLocked()
		w.boundEnd = now.Add(maxWrite)
		w.bound, w.unbind = context.WithDeadline(context.Background(), w.boundEnd)
	}
	return w.bound
}

func (w *wsConn) unbindLocked() {
	if w.unbind != nil {
		w.unbind()
		w.bound, w.unbind = nil, nil
	}
}

func (w *wsConn) Close(code CloseCode, reason string) {
	status := websocket.StatusPolicyViolation
	switch code {
	case CloseProtocol:
		status = websocket.StatusProtocolError
	case CloseGoingAway:
		status = websocket.StatusGoingAway
	case CloseNormal:
		status = websocket.StatusNormalClosure
	}
	w.ready.closing(func() { w.c.Close(status, reason) })
}

func (w *wsConn) CloseNow() { w.c.CloseNow() }

func (w *wsConn) Ping(ctx context.Context) error { return w.c.Ping(ctx) }

func describeEnd(err error) string {
	switch status := websocket.CloseStatus(err); {
	case errors.Is(err, websocket.ErrMessageTooBig), status == websocket.StatusMessageTooBig:
		// The library closes with 1009 and reports its read limit as
		// ErrMessageTooBig, not as a close status.
		return "frame larger than the hub accepts"
	case status == -1 && errors.Is(err, context.Canceled):
		return "closed by the hub"
	case status == -1:
		return "connection dropped" // what the firmware does: TCP close, no Close frame (§3.5)
	default:
		return fmt.Sprintf("closed by the device (%d)", status)
	}
}

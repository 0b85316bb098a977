package session

import (
	"context"

	"github.com/xiaozhi-hub/hub/protocol"
)

// Connection is one device connection as a transport delivers it: the
// seam between the device session (identity, hello, MCP client, IoT,
// events, audio, close) and the bytes, modelled on the MCP go-sdk's
// Transport/Connection split. The session never sees how messages travel.
//
// The WebSocket adapter (wsconn.go) is the first implementation: text
// frames are JSON messages, binary frames are audio in the framing of
// protocol version 1, 2 or 3. An MQTT+UDP adapter implements it too: JSON
// messages arrive as MQTT publishes and are published back, audio travels
// over a UDP session (AES-CTR, its own header), and Negotiate sets up that
// UDP session and describes it in Negotiated.UDP, which the session puts
// into the server hello.
//
// Read is called by one goroutine at a time. WriteText, WriteAudio and
// Close are safe for concurrent use, and each write is sent whole, one
// after another (the hub writes from the read loop, discovery and API
// calls: an adapter serialises them, see wsConn).
type Connection interface {
	// Read returns the device's next message. ctx bounds the wait; a
	// long-lived read loop passes context.Background() and ends the wait
	// with CloseNow instead (cheaper per message). When the connection
	// ends, Read returns an error; an *EndError says why in words.
	Read(ctx context.Context) (Message, error)
	// Negotiate takes the device's hello and the session id the hub
	// answers it with, and decides what this transport carries: the
	// transport name of the server hello, the audio framing, and for UDP
	// the session's address and keys. It does no I/O on the connection;
	// the session writes the server hello with WriteText.
	Negotiate(sessionID string, hello protocol.ClientHello) (Negotiated, error)
	// WriteText sends one JSON message to the device.
	WriteText(ctx context.Context, data []byte) error
	// WriteAudio sends one Opus frame to the device, framed as negotiated.
	WriteAudio(ctx context.Context, f AudioFrame) error
	// Close ends the connection telling the device why, where the
	// transport can (a WebSocket close frame; an MQTT goodbye). It may
	// block for the closing handshake.
	Close(code CloseCode, reason string)
	// CloseNow drops the connection without a word. It does not block.
	CloseNow()
}

// pinger is a Connection whose transport needs the hub to probe a silent
// device (WebSocket: a half-open TCP connection is found only by a ping).
// Transports with their own keepalive (MQTT) do not implement it.
type pinger interface {
	Ping(ctx context.Context) error
}

// Idle is a connection whose device is connected before and between
// conversations (MQTT+UDP: the device keeps its MQTT session while idle and
// serves MCP over it). Such connections are served with Server.ServeIdle:
// the session starts at once, without waiting for a hello; each hello
// opens a conversation with its own session id (Negotiate sets up its
// audio channel, the hub answers with a server hello), and the device's goodbye ends the
// conversation, not the connection.
//
// An idle connection is not read by a goroutine of the session: its
// transport pushes each message to the Inbox that ServeIdle returns (from
// the goroutine that received it, so that an idle device costs no
// goroutine; during a conversation, from one that takes its audio too),
// and tells the Inbox when the connection ends.
type Idle interface {
	// Connection's methods but Read, as documented there.
	Negotiate(sessionID string, hello protocol.ClientHello) (Negotiated, error)
	WriteText(ctx context.Context, data []byte) error
	WriteAudio(ctx context.Context, f AudioFrame) error
	Close(code CloseCode, reason string)
	CloseNow()
	// EndConversation closes the audio channel the last Negotiate opened,
	// after the device said goodbye. It does not tell the device.
	EndConversation()
	// Goodbye ends the conversation whose hello was answered with
	// sessionID from the hub's side, if it is still the open one: the
	// device gets a goodbye with that session id, and the audio channel
	// closes. The connection stays. A goodbye for an earlier conversation
	// does nothing (the firmware would end its current one only if the ids
	// matched, and each conversation has its own).
	Goodbye(sessionID string)
}

// Inbox takes the messages of an idle connection, which its transport
// pushes (Server.ServeIdle returns it).
type Inbox interface {
	// Receive handles one message from the device on the caller's
	// goroutine, one call at a time in the order of the calls (a call
	// waits for the one before it). It does not wait for slow work:
	// discovery, storage and the voice engine run on goroutines of their
	// own, and replies to the hub's requests only complete them. A device
	// over its message budget is disconnected. After End, messages are
	// dropped.
	Receive(m Message)
	// End ends the session: the connection ended, for reason (in words,
	// for the offline event). Calls in flight to the device fail at once.
	// It does not block, and may be called more than once and from
	// within Receive (through the connection's Close).
	End(reason string)
}

// MessageKind tells a text message from an audio frame.
type MessageKind uint8

const (
	TextMessage  MessageKind = iota // a JSON message (hello, mcp, iot, listen, …)
	AudioMessage                    // one Opus frame
)

// Message is one message from the device.
type Message struct {
	Kind MessageKind
	// Text is the JSON of a text message, as received (not yet repaired:
	// the session validates it).
	Text []byte
	// Audio is the frame of an audio message. When the transport could not
	// unpack it, Err says why; the connection stays (one bad frame must not
	// end a conversation).
	Audio AudioFrame
	Err   error
	// Size is the message's size on the wire, for metrics.
	Size int
}

// AudioFrame is one Opus packet with its timestamp (ms, for server-side
// echo cancellation; 0 when the framing carries none), in either
// direction. Data may alias the transport's buffer until the next Read.
type AudioFrame struct {
	Data      []byte
	Timestamp uint32
}

// Negotiated is the outcome of the hello on a transport.
type Negotiated struct {
	// Transport is the server hello's "transport": "websocket" or "udp".
	Transport string
	// ProtocolVersion is the binary framing version the device and hub
	// agree on (1, 2 or 3 on WebSocket; 3 for MQTT hellos).
	ProtocolVersion int
	// UDP describes the audio channel for transport "udp"; nil otherwise.
	UDP *protocol.UDPParams
}

// CloseCode says why the hub ends a connection, for transports that can
// tell the device.
type CloseCode uint8

const (
	ClosePolicy    CloseCode = iota // the device broke a rule or was replaced (WebSocket 1008)
	CloseProtocol                   // the device's hello was malformed (1002)
	CloseGoingAway                  // the hub is shutting down (1001)
	CloseNormal                     // the conversation is over (1000)
)

// EndError is how a Connection's Read reports the end of the connection
// in words for people (the offline event's reason).
type EndError struct {
	Reason string
	Err    error
}

func (e *EndError) Error() string { return e.Reason + ": " + e.Err.Error() }
func (e *EndError) Unwrap() error { return e.Err }

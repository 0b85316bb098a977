// Package sim provides simulated xiaozhi-esp32 devices that behave like the
// real firmware on the wire (see docs/protocol.md; the
// section numbers in comments refer to it). They are used by end-to-end
// tests, by the hub's --demo mode and for load tests.
//
// A Device imitates either firmware 2.x (an MCP server, Mode "mcp") or
// firmware 1.7 (legacy IoT things, Mode "iot"):
//
//	d := sim.New(sim.Config{URL: "ws://127.0.0.1:8000/xiaozhi/v1/", DeviceID: "aa:bb:cc:00:00:01"})
//	d.AddTool(&sim.Tool{Name: "self.test.slow", Handler: ...})
//	if err := d.Connect(ctx); err != nil { ... } // returns after the server hello
//	...
//	d.Drop() // drops TCP, as the firmware does: no WebSocket Close frame
//	d.Wait()
//
// Or d.Run(ctx), which connects, serves and reconnects until ctx ends.
//
// Cost per connected device: one goroutine (the read loop), plus a
// short-lived one while scheduled work (tool calls, replies) is pending,
// like the firmware's main loop. Tool definitions are shared between
// devices; handlers reach their device with [DeviceFrom].
package sim

import (
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/xiaozhi-hub/hub/protocol"
	"github.com/xiaozhi-hub/hub/sim/mqttdevice"
)

// Mode selects the firmware generation a device imitates.
type Mode string

const (
	// ModeMCP is firmware 2.x: hello with features.mcp, an MCP server (§8).
	ModeMCP Mode = "mcp"
	// ModeIoT is firmware 1.7 built with the legacy IoT protocol (§9).
	ModeIoT Mode = "iot"
)

// IoT thing sets (§9: names differ by version).
const (
	// ThingsClassic is Speaker (SetVolume) and Lamp (TurnOn, TurnOff) with
	// the Chinese descriptions of v1.5-era firmware. The default.
	ThingsClassic = "classic"
	// ThingsV177 is v1.7.7: AudioSpeaker (set_volume), Screen (set_theme,
	// set_brightness), Lamp (turn_on, turn_off) and Battery.
	ThingsV177 = "v1.7.7"
)

// Config describes one simulated device. The zero value of every field but
// URL is usable.
type Config struct {
	URL string // ws:// or wss:// URL of the hub's device endpoint
	// Transport is how the device reaches its server: "" follows the OTA
	// answer like the firmware (MQTT when it has an mqtt object, else
	// WebSocket), "websocket" or "mqtt" force one (mqtt needs MQTT).
	Transport string
	// MQTT is the MQTT login as the firmware stores it from the OTA
	// answer's mqtt object (sim/mqttdevice, docs/protocol.md §4).
	MQTT     mqttdevice.Config
	DeviceID string // MAC address, lowercase with colons; random if empty
	ClientID string // UUID v4; derived from DeviceID if empty (stable, like NVS)
	Token    string // sent as "Authorization: Bearer <token>" when non-empty

	ProtocolVersion int    // binary audio framing 1..3 (§3.4); 0 means 1
	Board           string // BOARD_NAME, serverInfo.name; default "bread-compact-wifi"
	Firmware        string // serverInfo.version; default "2.4.2" (mcp) or "1.7.7" (iot)
	Mode            Mode   // ModeMCP (default) or ModeIoT

	// IdentityInQuery sends device-id, client-id, protocol-version and
	// authorization as URL query parameters instead of headers, as browser
	// clients do.
	IdentityInQuery bool

	// Name and Room are labels for demos; they are not sent on the wire
	// (the firmware has no name). The hub's --demo mode may apply them.
	Name, Room string
	Aliases    []string

	// Hardware. The MCP tools and IoT things offered follow from these.
	NoScreen  bool   // no self.screen.* tools
	Lamp      bool   // self.lamp.* tools (lamp_controller.h); IoT always has a Lamp
	IoTThings string // ThingsClassic (default) or ThingsV177

	// ListenOnConnect sends "listen start" (auto mode) right after the
	// hello, as a device does when a button press opened the channel (§6).
	ListenOnConnect bool

	// HelloTimeout is how long Connect waits for the server hello; 10 s
	// like the firmware (§3.3) when zero.
	HelloTimeout time.Duration

	// RecordFrames keeps every text frame received, for ReceivedRaw.
	RecordFrames bool
	// OnText, if set, is called from the read loop with every text frame
	// received; it must not block, and the slice must not be retained.
	OnText func(data []byte)
	// OnAudio, if set, is called from the read loop with every binary
	// (audio) frame received, whatever the device's state; the same rules
	// as OnText apply.
	OnAudio func(data []byte)

	// Faults are misbehaviours for tests, all off by default.
	Faults Faults

	// OTAURL, if set, is the OTA endpoint (§2) that Provision and Boot
	// check first, like the firmware at every boot: its answer sets URL,
	// Token and ProtocolVersion, may offer firmware, and may make the device
	// show an activation code and poll <OTAURL>/activate until approved.
	OTAURL string
	// SerialNumber, if set, is the eFuse serial: the device then uses
	// Activation-Version 2 and signs the challenge with ActivationKey
	// (default: derived from DeviceID), as the firmware does with its
	// eFuse HMAC key.
	SerialNumber  string
	ActivationKey []byte
	// OnActivation, if set, is called with the code (and message) the
	// device shows and speaks; the device also logs it.
	OnActivation func(code, message string)
	// ActivationPoll and ActivationRetry are the waits after a 202 and after
	// any other /activate answer (firmware: 3 s and 10 s); OTARetry is
	// Boot's first wait after a failed check, doubled up to 10 tries
	// (firmware: 10 s).
	ActivationPoll, ActivationRetry, OTARetry time.Duration

	// ReconnectMin and ReconnectMax bound Run's back-off between
	// connections (defaults 500 ms and 30 s).
	ReconnectMin, ReconnectMax time.Duration

	Logger     *slog.Logger // default: discard
	HTTPClient *http.Client // default: a shared client without proxy or gzip
}

// Faults are switches that make a device misbehave in ways real firmware
// does not, to test the hub's defences.
type Faults struct {
	// PaginationLoop answers every tools/list with nextCursor equal to the
	// name of the first tool of the page: a client following it loops forever.
	PaginationLoop bool
	// ErrorCode, when non-zero, is added as "code" to every JSON-RPC error
	// (the firmware sends only "message", §8.2).
	ErrorCode int
	// ReplyDelay delays every MCP reply.
	ReplyDelay time.Duration
	// UnknownIDReplies sends, before each reply, a result for an id the hub
	// never used.
	UnknownIDReplies bool
	// UnescapedErrors inserts JSON-RPC error messages without escaping
	// them, as firmware 2.4.2's ReplyError does (§8.2, §12.25): a message
	// with a quote makes the whole frame invalid JSON.
	UnescapedErrors bool
	// FailLists answers the first FailLists tools/list requests of each
	// connection with an error, like a device asked right after boot.
	FailLists int
	// StatesFirst (IoT) sends the full states before the descriptors when
	// the channel opens, as v1.7.7 does when listening starts at once.
	StatesFirst bool
	// InvalidUTF8 puts the bytes 0xFF 0xFE (never valid UTF-8) at the start
	// of every description and result text the device sends.
	InvalidUTF8 bool
}

// invalidUTF8 is what the InvalidUTF8 fault inserts.
const invalidUTF8 = "\xff\xfe"

// withInvalidUTF8 applies the InvalidUTF8 fault to JSON text.
func withInvalidUTF8(js string) string {
	js = strings.ReplaceAll(js, `"description":"`, `"description":"`+invalidUTF8)
	return strings.ReplaceAll(js, `"text":"`, `"text":"`+invalidUTF8)
}

// Device states, as in the firmware's state machine (§5.3).
const (
	StateIdle      = "idle"
	StateListening = "listening"
	StateSpeaking  = "speaking"
)

// Device is one simulated device. It outlives connections, like the
// firmware: state (volume, session_id, …) survives reconnects.
type Device struct {
	cfg  Config
	log  *slog.Logger
	loop mainLoop

	mu         sync.Mutex
	link       *link  // current connection, nil before the first Connect
	transport  string // "mqtt" or anything else for WebSocket (Config.Transport, or the OTA answer)
	sessionID  string
	downlink   protocol.AudioParams
	state      string
	listenMode string // mode of the last listen start: manual ends a turn in idle (§5.2)
	faults     Faults
	tools      []*Tool
	lastStates map[string]string // IoT: state JSON last sent per thing (§9 delta)

	volume, brightness int
	theme              string
	lampOn             bool
	battery            int
	upgradeURL         string
	visionURL          string
	visionToken        string

	calls        []string
	frames       [][]byte
	dropped      int // MCP messages dropped by §8.2 validation
	notes        int // MCP notifications received (ignored)
	audioIn      int // binary frames accepted while speaking
	audioDropped int // binary frames dropped outside speaking (§5.3)
	connects     int // successful hello exchanges
}

// New returns a device for cfg with defaults filled in. It does not connect.
func New(cfg Config) *Device {
	if cfg.ProtocolVersion == 0 {
		cfg.ProtocolVersion = 1
	}
	if cfg.Mode == "" {
		cfg.Mode = ModeMCP
	}
	if cfg.Board == "" {
		cfg.Board = "bread-compact-wifi"
	}
	if cfg.Firmware == "" {
		cfg.Firmware = "2.4.2"
		if cfg.Mode == ModeIoT {
			cfg.Firmware = "1.7.7"
		}
	}
	if cfg.IoTThings == "" {
		cfg.IoTThings = ThingsClassic
	}
	if cfg.DeviceID == "" {
		var b [6]byte
		_, _ = rand.Read(b[:])
		b[0] = b[0]&0xfe | 0x02 // locally administered, unicast
		cfg.DeviceID = fmt.Sprintf("%02x:%02x:%02x:%02x:%02x:%02x", b[0], b[1], b[2], b[3], b[4], b[5])
	}
	if cfg.ClientID == "" {
		cfg.ClientID = uuidFrom(cfg.DeviceID)
	}
	if cfg.HelloTimeout == 0 {
		cfg.HelloTimeout = 10 * time.Second
	}
	if cfg.ReconnectMin == 0 {
		cfg.ReconnectMin = 500 * time.Millisecond
	}
	if cfg.ReconnectMax == 0 {
		cfg.ReconnectMax = 30 * time.Second
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = defaultHTTPClient
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	d := &Device{transport: cfg.Transport,
		cfg:        cfg,
		log:        log.With("device", cfg.DeviceID),
		downlink:   protocol.AudioParams{Format: "opus", SampleRate: 24000, Channels: 1, FrameDuration: 60},
		state:      StateIdle,
		faults:     cfg.Faults,
		volume:     70,
		brightness: 100,
		theme:      "light",
		battery:    50,
	}
	if cfg.Mode == ModeMCP {
		d.tools = builtinTools(cfg)
	}
	return d
}

// uuidFrom derives a stable UUID v4-formatted id from s.
func uuidFrom(s string) string {
	h := sha256.Sum256([]byte("xiaozhi-sim/" + s))
	h[6] = h[6]&0x0f | 0x40
	h[8] = h[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", h[0:4], h[4:6], h[6:8], h[8:10], h[10:16])
}

// Config returns the device's configuration with defaults filled in.
func (d *Device) Config() Config { return d.cfg }

// ID returns the Device-Id.
func (d *Device) ID() string { return d.cfg.DeviceID }

// SessionID returns the session_id from the last server hello. Like the
// firmware it is kept across connections (§3.3).
func (d *Device) SessionID() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.sessionID
}

// DownlinkAudio returns the audio parameters announced by the server hello
// (24 kHz / 60 ms when it announced none, §3.3).
func (d *Device) DownlinkAudio() protocol.AudioParams {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.downlink
}

// State returns the device state: StateIdle, StateListening or StateSpeaking.
func (d *Device) State() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.state
}

// Volume returns the speaker volume.
func (d *Device) Volume() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.volume
}

// Brightness returns the screen brightness.
func (d *Device) Brightness() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.brightness
}

// Theme returns the screen theme ("light" or "dark").
func (d *Device) Theme() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.theme
}

// LampOn reports whether the lamp is on.
func (d *Device) LampOn() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.lampOn
}

// UpgradeURL returns the url of the last self.upgrade_firmware call.
func (d *Device) UpgradeURL() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.upgradeURL
}

// Vision returns capabilities.vision url and token from the last initialize.
func (d *Device) Vision() (url, token string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.visionURL, d.visionToken
}

// ReceivedCalls returns the tool names of all tools/call requests that
// passed the §8.2 checks, in order, including those the device rejected
// ("" when the name was missing).
func (d *Device) ReceivedCalls() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.calls...)
}

// ReceivedRaw returns every text frame received (only with RecordFrames).
func (d *Device) ReceivedRaw() [][]byte {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([][]byte(nil), d.frames...)
}

// Stats are counters of what a device received.
type Stats struct {
	Connects      int // accepted server hellos
	DroppedMCP    int // MCP messages silently dropped (§8.2)
	Notifications int // MCP notifications received (ignored)
	AudioIn       int // binary frames received while speaking
	AudioDropped  int // binary frames received in other states (dropped, §5.3)
}

// Stats returns the device's counters.
func (d *Device) Stats() Stats {
	d.mu.Lock()
	defer d.mu.Unlock()
	return Stats{d.connects, d.dropped, d.notes, d.audioIn, d.audioDropped}
}

// SetFaults replaces the device's misbehaviour switches.
func (d *Device) SetFaults(f Faults) {
	d.mu.Lock()
	d.faults = f
	d.mu.Unlock()
}

package ota

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/protocol"
)

// maxCheckBody bounds the system-info body (the firmware's is ~2 KB).
const maxCheckBody = 64 << 10

// The OTA answer (docs/protocol.md §2.2). Every member name is at most 15 characters: the
// firmware copies websocket and mqtt members into NVS, whose keys are
// limited to 15, and aborts when a write fails. The mqtt member is sent
// only to devices the hub puts on MQTT: its presence, even empty, switches
// the device to MQTT, and its absence (with websocket present) moves a
// device back to WebSocket. websocket values are all sent, always: the
// device keeps old values of members it is not sent.
type answer struct {
	ServerTime serverTime      `json:"server_time"`
	Firmware   *firmwareOffer  `json:"firmware,omitempty"`
	WebSocket  websocketConfig `json:"websocket"`
	MQTT       *mqttConfig     `json:"mqtt,omitempty"`
	Activation *activationJSON `json:"activation,omitempty"`
}

type serverTime struct {
	Timestamp      int64 `json:"timestamp"`       // milliseconds since the epoch
	TimezoneOffset int   `json:"timezone_offset"` // minutes east of UTC
}

// firmwareOffer never carries force: force 1 with the running version
// re-flashes the device at every boot.
type firmwareOffer struct {
	Version string `json:"version"` // numeric, dotted
	URL     string `json:"url"`
}

type websocketConfig struct {
	URL     string `json:"url"`
	Token   string `json:"token"`   // "" clears a token the device kept
	Version int    `json:"version"` // a number: a string makes the device use 1
}

type activationJSON struct {
	Code      string `json:"code"`
	Message   string `json:"message"`
	Challenge string `json:"challenge"`
	TimeoutMs int64  `json:"timeout_ms"`
}

// checkInfo is what one OTA request told the hub.
type checkInfo struct {
	deviceID, clientID string
	board, firmware    string // User-Agent: <board>/<version>
	activationVersion  int
	serial             string
	systemInfo         json.RawMessage
	remote             string
	at                 time.Time
}

// serveCheck answers the OTA check. A well-formed request always gets 200
// and the JSON answer: any other status makes the device retry and, after
// ten failures, fall back to MQTT.
func (s *Service) serveCheck(w http.ResponseWriter, r *http.Request) {
	if !s.admit(w, r) {
		s.opts.OnCheck("rate_limited")
		return
	}
	c, err := s.readCheck(w, r)
	if err != nil {
		s.opts.OnCheck("refused")
		s.refuse(w, r, err)
		return
	}
	base := s.baseURL(r)
	_, offset := c.at.In(s.opts.Location).Zone()
	ans := answer{
		ServerTime: serverTime{Timestamp: c.at.UnixMilli(), TimezoneOffset: offset / 60},
		WebSocket:  websocketConfig{URL: wsURL(base), Version: s.opts.WSVersion},
	}
	s.mu.RLock()
	t, known := s.trust[c.deviceID]
	m := matchIdentity(t, known, c.clientID, c.serial, true)
	admitted := s.trustedLocked(c.deviceID) && (m != other || s.opts.Policy == PolicyOpen)
	s.mu.RUnlock()
	if m == other && s.opts.Policy != PolicyOpen {
		// Another identity with this device's MAC: a stranger, or the
		// device re-flashed. It gets a code of its own, which a person
		// approves only if the device shows it.
		s.identityRefused("ota", c.deviceID, t, c.clientID, c.serial, c.remote)
	}
	if !admitted {
		act, err := s.activationFor(c) // nil if approved meanwhile
		if err != nil {
			s.opts.OnCheck("refused")
			s.refuse(w, r, err)
			return
		}
		ans.Activation, admitted = act, act == nil
	}
	token := admitted
	if admitted && s.isNew(c.deviceID) {
		// A device new to the hub: each address brings at most
		// NewDevicesPerAddr an hour. Under PolicyOpen the WebSocket
		// admits it anyway: it gets its answer, without a token (and so
		// without an MQTT login).
		ok, wait := s.newDevices.admit(limitKey(r), pendingKey(c.deviceID, c.clientID), c.at)
		switch {
		case !ok && s.opts.Policy != PolicyOpen:
			s.opts.OnCheck("rate_limited")
			s.log.Debug("OTA check refused: too many new devices from this address", "device", c.deviceID, "remote", c.remote)
			s.refuse(w, r, s.newDeviceRefusal(w, wait))
			return
		case !ok:
			token = false
		default:
			s.pruneUnused(r.Context()) // the new device's records will need room
		}
	}
	if token {
		s.mu.RLock()
		t := s.trust[c.deviceID]
		s.mu.RUnlock()
		// Also with PolicyOpen, so that a later switch to token needs no reboot.
		ans.WebSocket.Token = signToken(s.secret, c.deviceID, c.clientID, t.Generation)
		ans.MQTT = s.mqttFor(base, c, t, ans.WebSocket.Token)
	}
	if admitted {
		ans.Firmware = s.offer(base, c)
		s.recordCheck(r.Context(), c, m == unbound)
	}
	if admitted {
		s.opts.OnCheck("admitted")
	} else {
		s.opts.OnCheck("activation")
	}
	writeJSON(w, http.StatusOK, ans)
	s.log.Debug("OTA check", "device", c.deviceID, "board", c.board, "firmware", c.firmware,
		"admitted", admitted, "offer", ans.Firmware != nil, "remote", c.remote)
}

func (s *Service) readCheck(w http.ResponseWriter, r *http.Request) (checkInfo, error) {
	id, err := protocol.ParseIdentity(r)
	if err != nil {
		return checkInfo{}, err
	}
	c := checkInfo{deviceID: id.DeviceID, clientID: id.ClientID, remote: hub.Host(r.RemoteAddr), at: s.opts.Now()}
	if c.activationVersion, err = activationVersion(r); err != nil {
		return c, err
	}
	c.serial = cleanSerial(r.Header.Get("Serial-Number"))
	c.board, c.firmware = parseUserAgent(r.Header.Get("User-Agent"))
	body, err := readBody(w, r, maxCheckBody)
	if err != nil {
		return c, err
	}
	if len(body) > 0 {
		var buf bytes.Buffer
		if body[0] != '{' || json.Compact(&buf, body) != nil {
			return c, hub.Errorf(hub.EBADREQUEST, "the body must be the device's system-info JSON object (or empty)")
		}
		c.systemInfo = summarizeSystemInfo(buf.Bytes())
	}
	return c, nil
}

// readBody reads at most limit bytes, trimmed of white space.
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		return nil, &httpError{http.StatusRequestEntityTooLarge, hub.EBADREQUEST,
			"the body is larger than " + itoa(limit) + " bytes"}
	case err != nil:
		return nil, hub.Errorf(hub.EBADREQUEST, "could not read the body: %v", err)
	}
	return bytes.TrimSpace(body), nil
}

func activationVersion(r *http.Request) (int, error) {
	switch v := strings.TrimSpace(r.Header.Get("Activation-Version")); v {
	case "", "1":
		return 1, nil
	case "2":
		return 2, nil
	default:
		return 0, hub.Errorf(hub.EBADREQUEST, "Activation-Version must be 1 or 2, got %q", hub.Truncate([]byte(v), 20))
	}
}

// parseUserAgent splits "bread-compact-wifi/2.4.2"; anything unusable
// yields "" (and no firmware offer).
func parseUserAgent(ua string) (board, version string) {
	ua, _, _ = strings.Cut(strings.TrimSpace(ua), " ")
	board, version, ok := strings.Cut(ua, "/")
	if !ok || !validBoard(board) || len(version) > 64 {
		return "", ""
	}
	return board, version
}

// cleanSerial keeps a Serial-Number header (32 raw eFuse bytes) printable.
func cleanSerial(s string) string {
	if len(s) > 64 {
		s = s[:64]
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return "hex:" + hexString([]byte(s))
		}
	}
	return s
}

// baseURL is the hub's URL as the device reached it: public-url when set,
// else the request's Host. The firmware sends Host without the port, so the
// port the request arrived on is added back.
func (s *Service) baseURL(r *http.Request) *url.URL {
	if s.public != nil {
		u := *s.public
		return &u
	}
	u := &url.URL{Scheme: "http", Host: r.Host}
	if r.TLS != nil {
		u.Scheme = "https"
	}
	local, _ := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if u.Host == "" && local != nil {
		u.Host = local.String()
	}
	if _, _, err := net.SplitHostPort(u.Host); err != nil && local != nil {
		if _, port, err := net.SplitHostPort(local.String()); err == nil &&
			!(port == "80" && u.Scheme == "http" || port == "443" && u.Scheme == "https") {
			u.Host = net.JoinHostPort(strings.Trim(u.Host, "[]"), port)
		}
	}
	return u
}

// wsURL is the device endpoint under base.
func wsURL(base *url.URL) string {
	u := *base
	u.Scheme = map[string]string{"https": "wss"}[u.Scheme]
	if u.Scheme == "" {
		u.Scheme = "ws"
	}
	u.Path += "/xiaozhi/v1/"
	return u.String()
}

// offer is the newest firmware for the device's board when it is newer
// than the one running, else nil.
func (s *Service) offer(base *url.URL, c checkInfo) *firmwareOffer {
	if s.fw == nil || c.board == "" {
		return nil
	}
	running, ok := parseRunning(c.firmware)
	if !ok {
		return nil
	}
	img, ok := s.fw.newest(c.board)
	if !ok || compareVersions(img.version.nums, running) <= 0 {
		return nil
	}
	u := *base
	u.Path += "/xiaozhi/ota/firmware/" + c.board + "/" + img.version.text + ".bin"
	return &firmwareOffer{Version: img.version.text, URL: u.String()}
}

package sim

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// ErrOTA is wrapped by CheckOTA's error when the answer would break a real
// device (crash, abort, or a switch to MQTT); the message says how.
var ErrOTA = errors.New("sim: OTA answer not accepted")

// OTAResult is what one OTA check told the device (docs/protocol.md §2.2). Nil sections
// were absent.
type OTAResult struct {
	Status     int
	WebSocket  *OTAWebSocket
	Firmware   *OTAFirmware
	Activation *OTAActivation
	// Timestamp (ms) and TimezoneOffset (minutes) from server_time.
	Timestamp      int64
	TimezoneOffset int
	HasServerTime  bool
	Raw            []byte // the body as received
}

// OTAWebSocket is the websocket section as stored in NVS.
type OTAWebSocket struct {
	URL, Token string
	Version    int // 1 when the answer's version was not a number

	hasURL, hasToken, hasVersion bool // members sent; the others keep their NVS value
}

// OTAFirmware is a firmware offer; Newer is the firmware's own decision.
type OTAFirmware struct {
	Version, URL string
	Force, Newer bool
}

// OTAActivation is the activation section.
type OTAActivation struct {
	Code, Message, Challenge string
	TimeoutMs                int
}

// Provisioned is what Provision went through.
type Provisioned struct {
	Last     *OTAResult // the final answer, without activation
	Codes    []string   // activation codes shown, in order, repeats collapsed
	Upgrades []Upgrade  // firmware installed, each followed by a "reboot"
}

// Upgrade is one firmware download.
type Upgrade struct {
	Version string
	Bytes   int64
}

// CheckOTA makes the boot-time OTA check (§2.1) and applies the websocket
// section like the firmware stores it in NVS: members it is sent replace
// URL, Token and ProtocolVersion; members it is not sent keep their value.
// Call it before Connect or Run, not while they run.
func (d *Device) CheckOTA(ctx context.Context) (*OTAResult, error) {
	if d.cfg.OTAURL == "" {
		return nil, errors.New("sim: no OTAURL configured")
	}
	res, err := d.otaPost(ctx, d.cfg.OTAURL, d.systemInfoJSON())
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("sim: OTA check: %w", err)
	}
	r := &OTAResult{Status: res.StatusCode, Raw: body}
	if res.StatusCode != http.StatusOK {
		return r, fmt.Errorf("%w: HTTP %d (the device retries, then falls back to MQTT): %s", ErrOTA, res.StatusCode, bytes.TrimSpace(body))
	}
	root, ok := object(body)
	if !ok {
		return r, fmt.Errorf("%w: the body is not a JSON object (the device retries, then falls back to MQTT)", ErrOTA)
	}
	if err := r.parse(root, d.cfg.Firmware); err != nil {
		return r, err
	}
	if err := d.applyMQTT(root); err != nil {
		return r, err
	}
	if ws := r.WebSocket; ws != nil {
		if ws.hasURL {
			d.cfg.URL = ws.URL
		}
		if ws.hasToken {
			d.cfg.Token = ws.Token
		}
		if ws.hasVersion {
			d.cfg.ProtocolVersion = ws.Version
		}
	}
	return r, nil
}

func (r *OTAResult) parse(root map[string]json.RawMessage, running string) error {
	if ws, ok := object(item(root, "websocket")); ok {
		r.WebSocket = &OTAWebSocket{Version: 1}
		for k := range ws {
			if len(k) > 15 { // NVS key limit: the write fails inside ESP_ERROR_CHECK
				return fmt.Errorf("%w: websocket member %q is longer than 15 characters (the device aborts and reboots)", ErrOTA, k)
			}
		}
		w := r.WebSocket
		w.URL, w.hasURL = str(item(ws, "url"))
		w.Token, w.hasToken = str(item(ws, "token"))
		if v := item(ws, "version"); v != nil {
			w.hasVersion = true // stored as sent; anything but a number reads back as 1
			if n, ok := number(v); ok && n >= 1 && n <= 3 {
				w.Version = cInt(n)
			}
		}
	}
	if st, ok := object(item(root, "server_time")); ok {
		if ms, ok := number(item(st, "timestamp")); ok {
			r.Timestamp, r.HasServerTime = int64(ms), true
		}
		if off, ok := number(item(st, "timezone_offset")); ok {
			r.TimezoneOffset = cInt(off)
		}
	}
	if fw, ok := object(item(root, "firmware")); ok {
		v, okV := str(item(fw, "version"))
		u, okU := str(item(fw, "url"))
		if okV && okU {
			newer, err := newerFirmware(running, v)
			if err != nil {
				return err
			}
			force, _ := number(item(fw, "force"))
			r.Firmware = &OTAFirmware{Version: v, URL: u, Force: force == 1, Newer: newer}
			if r.Firmware.Force && v == running {
				return fmt.Errorf("%w: force:1 with the running version %s re-flashes the device at every boot", ErrOTA, v)
			}
		}
	}
	if a, ok := object(item(root, "activation")); ok {
		r.Activation = &OTAActivation{}
		r.Activation.Code, _ = str(item(a, "code"))
		r.Activation.Message, _ = str(item(a, "message"))
		r.Activation.Challenge, _ = str(item(a, "challenge"))
		if n, ok := number(item(a, "timeout_ms")); ok {
			r.Activation.TimeoutMs = cInt(n)
		}
	}
	return nil
}

// newerFirmware is Ota::IsNewVersionAvailable: split on '.', std::stoi per
// segment (which throws, crashing the device, on a segment that does not
// start with a digit), first difference wins, longer wins on a tie.
func newerFirmware(running, offered string) (bool, error) {
	seg := func(v string) ([]int, error) {
		var out []int
		for _, p := range strings.Split(v, ".") {
			n := 0
			for n < len(p) && p[n] >= '0' && p[n] <= '9' {
				n++
			}
			if n == 0 {
				return nil, fmt.Errorf("%w: firmware version %q: std::stoi(%q) throws (the device crashes)", ErrOTA, v, p)
			}
			x, _ := strconv.Atoi(p[:n])
			out = append(out, x)
		}
		return out, nil
	}
	cur, err := seg(running)
	if err != nil {
		return false, err
	}
	off, err := seg(offered)
	if err != nil {
		return false, err
	}
	for i := 0; i < len(cur) && i < len(off); i++ {
		if off[i] != cur[i] {
			return off[i] > cur[i], nil
		}
	}
	return len(off) > len(cur), nil
}

// otaPost sends a request with the firmware's OTA headers (§2.1).
func (d *Device) otaPost(ctx context.Context, url string, body []byte) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("sim: bad OTA URL %q: %w", url, err)
	}
	h := req.Header
	h.Set("Activation-Version", "1")
	if d.cfg.SerialNumber != "" {
		h.Set("Activation-Version", "2")
		h.Set("Serial-Number", d.cfg.SerialNumber)
	}
	h.Set("Device-Id", d.cfg.DeviceID)
	h.Set("Client-Id", d.cfg.ClientID)
	h.Set("User-Agent", d.cfg.Board+"/"+d.cfg.Firmware)
	h.Set("Accept-Language", "zh-CN")
	h.Set("Content-Type", "application/json")
	res, err := d.cfg.HTTPClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("sim: POST %s: %w", url, err)
	}
	return res, nil
}

// Activate makes one /activate request (§2.4) for challenge and returns the
// status: 200 activated, 202 pending.
func (d *Device) Activate(ctx context.Context, challenge string) (int, error) {
	url := d.cfg.OTAURL + "/activate"
	if strings.HasSuffix(d.cfg.OTAURL, "/") {
		url = d.cfg.OTAURL + "activate"
	}
	body := []byte("{}")
	if d.cfg.SerialNumber != "" {
		key := d.cfg.ActivationKey
		if key == nil {
			sum := sha256.Sum256([]byte("xiaozhi-sim efuse key/" + d.cfg.DeviceID))
			key = sum[:]
		}
		m := hmac.New(sha256.New, key)
		m.Write([]byte(challenge))
		body = marshal(map[string]string{"algorithm": "hmac-sha256", "serial_number": d.cfg.SerialNumber,
			"challenge": challenge, "hmac": hex.EncodeToString(m.Sum(nil))})
	}
	res, err := d.otaPost(ctx, url, body)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 64<<10))
	res.Body.Close()
	return res.StatusCode, nil
}

// Provision runs the firmware's boot loop (§2.4): check; install newer
// firmware and "reboot" (check again with the new version); while the
// answer has an activation, show the code and poll /activate up to 10 times
// (202: wait ActivationPoll, other: wait ActivationRetry, 200: stop), then
// check again. It returns once an answer has no activation. Call it before
// Connect or Run, not while they run.
func (d *Device) Provision(ctx context.Context) (Provisioned, error) {
	poll, retry, _ := d.otaWaits()
	var p Provisioned
	for {
		r, err := d.CheckOTA(ctx)
		if err != nil {
			return p, err
		}
		if fw := r.Firmware; fw != nil && (fw.Newer || fw.Force) {
			n, err := d.download(ctx, fw.URL)
			if err != nil {
				d.log.Warn("sim: firmware upgrade failed; continuing with the running version", "version", fw.Version, "err", err)
			} else {
				if len(p.Upgrades) >= 3 {
					return p, fmt.Errorf("%w: offered firmware again after %d upgrades (upgrade loop)", ErrOTA, len(p.Upgrades))
				}
				d.log.Info("sim: firmware upgraded, rebooting", "from", d.cfg.Firmware, "to", fw.Version, "bytes", n)
				p.Upgrades = append(p.Upgrades, Upgrade{fw.Version, n})
				d.cfg.Firmware = fw.Version
				continue
			}
		}
		a := r.Activation
		if a == nil || a.Code == "" && a.Challenge == "" {
			p.Last = r
			return p, nil
		}
		if a.Code != "" {
			if len(p.Codes) == 0 || p.Codes[len(p.Codes)-1] != a.Code {
				p.Codes = append(p.Codes, a.Code)
			}
			d.log.Info("sim: activation code shown; approve it on the hub", "code", a.Code, "message", a.Message)
			if d.cfg.OnActivation != nil {
				d.cfg.OnActivation(a.Code, a.Message)
			}
		}
	polling:
		for range 10 {
			wait := retry // without a challenge Activate fails at once
			if a.Challenge != "" {
				switch st, err := d.Activate(ctx, a.Challenge); {
				case err == nil && st == http.StatusOK:
					break polling
				case err == nil && st == http.StatusAccepted:
					wait = poll
				}
			}
			if err := pause(ctx, wait); err != nil {
				return p, err
			}
		}
	}
}

// Boot is the firmware's start: Provision, retried on failure with a
// doubling wait from OTARetry (10 tries, then the stored settings are
// used), then Run until ctx ends.
func (d *Device) Boot(ctx context.Context) error {
	_, _, wait := d.otaWaits()
	for try := 1; ; try++ {
		_, err := d.Provision(ctx)
		if err == nil || ctx.Err() != nil {
			break
		}
		if try == 10 {
			d.log.Warn("sim: OTA check failed 10 times; using the stored settings", "err", err)
			break
		}
		d.log.Warn("sim: OTA check failed, retrying", "err", err, "in", wait)
		if pause(ctx, wait) != nil {
			break
		}
		wait *= 2
	}
	return d.Run(ctx)
}

// download fetches a firmware image like the firmware: status 200 and a
// Content-Length are required (a chunked body reads as length 0).
func (d *Device) download(ctx context.Context, url string) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	res, err := d.cfg.HTTPClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	switch {
	case res.StatusCode != http.StatusOK:
		return 0, fmt.Errorf("firmware download: HTTP %d", res.StatusCode)
	case res.ContentLength <= 0:
		return 0, errors.New("firmware download: no Content-Length (Failed to get content length)")
	case res.ContentLength > 32<<20:
		return 0, fmt.Errorf("firmware download: %d bytes do not fit an OTA partition", res.ContentLength)
	}
	n, err := io.Copy(io.Discard, res.Body)
	if err == nil && n != res.ContentLength {
		err = fmt.Errorf("firmware download: got %d of %d bytes", n, res.ContentLength)
	}
	return n, err
}

func (d *Device) otaWaits() (poll, retry, otaRetry time.Duration) {
	def := func(v, d time.Duration) time.Duration {
		if v <= 0 {
			return d
		}
		return v
	}
	return def(d.cfg.ActivationPoll, 3*time.Second), def(d.cfg.ActivationRetry, 10*time.Second), def(d.cfg.OTARetry, 10*time.Second)
}

// pause waits d, or returns ctx.Err() when ctx ends first.
func pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// applyMQTT stores the answer's mqtt object as the firmware does (ota.cc:
// every string and number member into NVS under its name, nothing erased)
// and picks the transport like application.cc: mqtt when the answer has
// it, else websocket when it has that. Config.Transport "websocket" or
// "mqtt" forces one.
func (d *Device) applyMQTT(root map[string]json.RawMessage) error {
	m, hasMQTT := object(item(root, "mqtt"))
	if hasMQTT {
		for k, v := range m {
			if len(k) > 15 {
				return fmt.Errorf("%w: mqtt member %q is longer than 15 characters (the device aborts and reboots)", ErrOTA, k)
			}
			sv, isStr := str(v)
			nv, isNum := number(v)
			c := &d.cfg.MQTT
			switch {
			case k == "endpoint" && isStr:
				c.Endpoint = sv
			case k == "client_id" && isStr:
				c.ClientID = sv
			case k == "username" && isStr:
				c.Username = sv
			case k == "password" && isStr:
				c.Password = sv
			case k == "publish_topic" && isStr:
				c.PublishTopic = sv
			case k == "keepalive" && isNum:
				c.Keepalive = uint16(nv)
			}
		}
		if d.cfg.MQTT.Endpoint == "" && d.cfg.Transport != "websocket" {
			return fmt.Errorf("%w: the answer's mqtt object switches the device to MQTT, but it has no endpoint (the device cannot connect)", ErrOTA)
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	switch {
	case d.cfg.Transport != "": // forced
	case hasMQTT:
		d.transport = "mqtt"
	case item(root, "websocket") != nil:
		d.transport = "websocket"
	}
	return nil
}

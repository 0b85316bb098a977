package ota

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/protocol"
)

// Activation is a code waiting for a person (hub.Activation).
type Activation = hub.Activation

// pending is one activation in progress.
type pending struct {
	Activation
	challenge  string
	systemInfo json.RawMessage
}

// activationFor returns the device's activation object: the code it was
// given, while that is valid (the firmware re-runs the check about every
// 30 s while pending, and must keep showing the same code), else a new
// one; nil if the device is admitted after all.
func (s *Service) activationFor(c checkInfo) (*activationJSON, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, known := s.trust[c.deviceID]
	m := matchIdentity(t, known, c.clientID, c.serial, true)
	if s.trustedLocked(c.deviceID) && m != other {
		return nil, nil
	}
	s.pending.prune(c.at)
	p := s.pending.byKey[pendingKey(c.deviceID, c.clientID)]
	if p == nil {
		if err := s.pending.makeRoom(c.remote, c.at, s.opts.MaxPending, s.opts.MaxPendingPerAddr); err != nil {
			return nil, err
		}
		p = &pending{challenge: hexString(randomBytes(16))}
		p.DeviceID, p.ClientID, p.Created, p.Expires = c.deviceID, c.clientID, c.at, c.at.Add(s.opts.CodeTTL)
		p.Remote = c.remote
		for p.Code == "" || s.pending.byCode[p.Code] != nil {
			p.Code = fmt.Sprintf("%06d", binary.BigEndian.Uint32(randomBytes(4))%1_000_000)
		}
		s.pending.add(p)
		s.log.Info("activation code issued: approve it with xiaozhi-hub devices approve CODE",
			"code", p.Code, "device", c.deviceID, "board", c.board, "remote", c.remote, "rebind", m == other)
	}
	p.Rebind, p.BoundClientID = m == other, ""
	if p.Rebind {
		p.BoundClientID = t.ClientID
	}
	p.Board, p.Firmware, p.LastCheck = c.board, c.firmware, c.at
	p.ActivationVersion = c.activationVersion
	if c.serial != "" {
		p.SerialNumber = c.serial
	}
	if c.systemInfo != nil {
		p.systemInfo = c.systemInfo
	}
	return &activationJSON{
		Code:      p.Code,
		Message:   "Approve on hub\n" + p.Code,
		Challenge: p.challenge,
		TimeoutMs: p.Expires.Sub(c.at).Milliseconds(),
	}, nil
}

// activateBody is an Activation-Version 2 body; version 1 sends {}.
type activateBody struct {
	Algorithm    string `json:"algorithm"`
	SerialNumber string `json:"serial_number"`
	Challenge    string `json:"challenge"`
	HMAC         string `json:"hmac"`
}

// serveActivate answers the device's polling (docs/protocol.md §2.4): 200 once the device is
// approved, 202 while its code waits for a person. It never waits itself:
// the firmware gives up after 30 s and polls again anyway.
func (s *Service) serveActivate(w http.ResponseWriter, r *http.Request) {
	if !s.admit(w, r) {
		return
	}
	id, err := protocol.ParseIdentity(r)
	if err != nil {
		s.refuse(w, r, err)
		return
	}
	if _, err := activationVersion(r); err != nil {
		s.refuse(w, r, err)
		return
	}
	raw, err := readBody(w, r, 4<<10)
	if err != nil {
		s.refuse(w, r, err)
		return
	}
	var b activateBody
	if len(raw) > 0 {
		if raw[0] != '{' || json.Unmarshal(raw, &b) != nil {
			s.refuse(w, r, hub.Errorf(hub.EBADREQUEST, `the body must be {} or {"algorithm","serial_number","challenge","hmac"} with string values`))
			return
		}
	}
	if err := b.check(); err != nil {
		s.refuse(w, r, err)
		return
	}
	now := s.opts.Now()
	serial := cleanSerial(r.Header.Get("Serial-Number"))
	s.mu.Lock()
	s.pending.prune(now)
	t, known := s.trust[id.DeviceID]
	if s.trustedLocked(id.DeviceID) && matchIdentity(t, known, id.ClientID, serial, true) != other {
		s.mu.Unlock()
		writeJSON(w, http.StatusOK, map[string]string{"status": "activated"})
		return
	}
	p := s.pending.byKey[pendingKey(id.DeviceID, id.ClientID)]
	switch {
	case p == nil:
		s.mu.Unlock()
		s.refuse(w, r, hub.Errorf(hub.ENOTFOUND, "no activation is pending for device %s with this Client-Id (none was issued, or its code expired): "+
			"the device gets a code from the OTA check", id.DeviceID))
		return
	case b.Challenge != "" && b.Challenge != p.challenge:
		s.mu.Unlock()
		s.refuse(w, r, hub.Errorf(hub.ECONFLICT, "the challenge is not the one issued with code %s: run the OTA check again", p.Code))
		return
	}
	p.LastPoll = now
	if b.HMAC != "" {
		p.ActivationVersion, p.HMAC = 2, b.HMAC
		if p.SerialNumber == "" {
			p.SerialNumber = cleanSerial(b.SerialNumber)
		}
	}
	s.mu.Unlock()
	writeJSON(w, http.StatusAccepted, map[string]string{"status": "pending"})
}

func (b activateBody) check() error {
	if b == (activateBody{}) {
		return nil
	}
	if b.Algorithm != "hmac-sha256" {
		return hub.Errorf(hub.EBADREQUEST, `algorithm must be "hmac-sha256", got %q`, hub.Truncate([]byte(b.Algorithm), 32))
	}
	if b.Challenge == "" {
		return hub.Errorf(hub.EBADREQUEST, "challenge is missing")
	}
	if len(b.HMAC) != 64 || strings.Trim(b.HMAC, "0123456789abcdef") != "" {
		return hub.Errorf(hub.EBADREQUEST, "hmac must be 64 lowercase hex digits")
	}
	return nil
}

// Peers are the other nodes of a cluster, as the activation routes need
// them: a code may have been issued by any node.
type Peers interface {
	// PeerPending lists the codes waiting on the other nodes.
	PeerPending(ctx context.Context) []Activation
	// PeerApprove approves a code issued by another node; ENOTFOUND when
	// no node has it.
	PeerApprove(ctx context.Context, code string, patch hub.DevicePatch) (Activation, Trust, error)
}

// Pending returns the activations waiting for a person, on this node and,
// in a cluster, on the others, oldest first.
func (s *Service) Pending() []Activation {
	out := s.LocalPending()
	if s.opts.Peers != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		seen := map[string]bool{}
		for _, a := range out {
			seen[a.Code] = true
		}
		for _, a := range s.opts.Peers.PeerPending(ctx) {
			if !seen[a.Code] {
				seen[a.Code] = true
				out = append(out, a)
			}
		}
		slices.SortFunc(out, func(a, b Activation) int {
			return cmp.Or(a.Created.Compare(b.Created), strings.Compare(a.Code, b.Code))
		})
	}
	return out
}

// LocalPending returns the activations this node issued, oldest first.
func (s *Service) LocalPending() []Activation {
	now := s.opts.Now()
	s.mu.Lock()
	s.pending.prune(now)
	out := make([]Activation, 0, len(s.pending.byKey))
	for _, p := range s.pending.byKey {
		out = append(out, p.Activation)
	}
	s.mu.Unlock()
	slices.SortFunc(out, func(a, b Activation) int {
		return cmp.Or(a.Created.Compare(b.Created), strings.Compare(a.Code, b.Code))
	})
	return out
}

// Approve trusts the device that was given code: its next /activate gets
// 200 and its next OTA check a token and no activation object. The approval
// is durable. patch names the device (registered at once when a Registry
// is set).
func (s *Service) Approve(ctx context.Context, code string, patch hub.DevicePatch) (Activation, Trust, error) {
	a, t, err := s.ApproveLocal(ctx, code, patch)
	if hub.ErrorCode(err) == hub.ENOTFOUND && s.opts.Peers != nil {
		return s.opts.Peers.PeerApprove(ctx, code, patch)
	}
	return a, t, err
}

// ApproveLocal is Approve for a code this node issued.
func (s *Service) ApproveLocal(ctx context.Context, code string, patch hub.DevicePatch) (Activation, Trust, error) {
	s.adminMu.Lock()
	defer s.adminMu.Unlock()
	now := s.opts.Now()
	s.mu.Lock()
	s.pending.prune(now)
	var p pending
	if q := s.pending.byCode[strings.TrimSpace(code)]; q != nil {
		p = *q
	}
	s.mu.Unlock()
	if p.Code == "" {
		return Activation{}, Trust{}, hub.Errorf(hub.ENOTFOUND, "no device is waiting with code %q: codes expire after %v "+
			"(the device then shows a new one)", code, s.opts.CodeTTL)
	}
	if s.opts.Registry != nil {
		if _, err := s.opts.Registry.Register(ctx, p.DeviceID, patch); err != nil {
			return Activation{}, Trust{}, err
		}
	}
	check := Trust{DeviceID: p.DeviceID, ClientID: p.ClientID, Board: p.Board, Firmware: p.Firmware,
		SystemInfo: p.systemInfo, LastCheck: p.LastCheck}
	if err := s.opts.Store.RecordCheck(ctx, check); err != nil {
		return Activation{}, Trust{}, fmt.Errorf("approve %s: %w", p.DeviceID, err)
	}
	s.mu.RLock()
	t := s.trust[p.DeviceID]
	s.mu.RUnlock()
	rebind := t.ClientID != p.ClientID && t.ClientID != "" || t.SerialNumber != p.SerialNumber && t.SerialNumber != ""
	if rebind {
		// A new identity for this device id: tokens of the old one end.
		t.Generation = newGeneration()
	}
	t.DeviceID, t.ClientID, t.Board, t.Firmware, t.LastCheck = p.DeviceID, p.ClientID, p.Board, p.Firmware, p.LastCheck
	t.Approved = now.UTC()
	t.ActivationVersion, t.SerialNumber, t.ActivationHMAC = p.ActivationVersion, p.SerialNumber, p.HMAC
	if err := s.opts.Store.SaveTrust(ctx, t); err != nil {
		return Activation{}, Trust{}, fmt.Errorf("approve %s: %w", p.DeviceID, err)
	}
	s.mu.Lock()
	s.trust[p.DeviceID] = t
	s.pending.removeDevice(p.DeviceID)
	s.mu.Unlock()
	if rebind && s.opts.Registry != nil {
		s.opts.Registry.Disconnect(p.DeviceID, "device identity re-bound")
		s.opts.Registry.Record(hub.EventDeviceRebound, p.DeviceID, map[string]string{"clientId": p.ClientID, "code": p.Code})
	}
	s.log.Info("device approved", "device", p.DeviceID, "code", p.Code, "board", p.Board)
	return p.Activation, t, nil
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}

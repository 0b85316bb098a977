package ota

import (
	"context"
	"crypto/subtle"
	"fmt"
	"net/http"
	"time"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/protocol"
)

// Trust is the core's trust record of a device (see hub.Trust).
type Trust = hub.Trust

// Store keeps trust records durably (package store implements it). A
// missing record is an ENOTFOUND *hub.Error.
type Store interface {
	// LoadTrust returns every record, without SystemInfo.
	LoadTrust(ctx context.Context) ([]Trust, error)
	// Trust returns one record with its SystemInfo.
	Trust(ctx context.Context, deviceID string) (Trust, error)
	// SaveTrust writes the decision: Generation, Approved, Revoked and the
	// activation evidence, creating the record if needed.
	SaveTrust(ctx context.Context, t Trust) error
	// RecordCheck writes what an OTA check reported: ClientID, Board,
	// Firmware, SystemInfo and LastCheck, creating the record if needed.
	RecordCheck(ctx context.Context, t Trust) error
}

// Authorize is the device endpoint's policy (session.Options.Authorize).
// Refusals are EUNAUTHORIZED errors saying what to do.
func (s *Service) Authorize(r *http.Request, id protocol.Identity) error {
	ctx := context.Background()
	if r != nil {
		ctx = r.Context()
	}
	if s.opts.Policy == PolicyOpen {
		s.makeRoomFor(ctx, id.DeviceID)
		return nil
	}
	return s.check(ctx, id, remoteHost(r), "websocket")
}

// check applies PolicyToken or PolicyActivation to a connecting device's
// identity (where says over what it connects, for the refusal event).
func (s *Service) check(ctx context.Context, id protocol.Identity, remote, where string) error {
	for _, t := range s.opts.DeviceTokens {
		if id.Token != "" && subtle.ConstantTimeCompare([]byte(t), []byte(id.Token)) == 1 {
			return nil
		}
	}
	s.mu.RLock()
	t, known := s.trust[id.DeviceID]
	trusted := s.trustedLocked(id.DeviceID)
	s.mu.RUnlock()
	if !trusted {
		if !t.Revoked.IsZero() {
			return hub.Errorf(hub.EUNAUTHORIZED, "device %s was revoked on this hub at %s; it shows a new activation code at its next boot for a person to approve",
				id.DeviceID, t.Revoked.UTC().Format(time.RFC3339))
		}
		return hub.Errorf(hub.EUNAUTHORIZED, "device %s is not approved on this hub: set its OTA URL to the hub's /xiaozhi/ota/, "+
			"then approve the 6-digit code it shows (xiaozhi-hub devices approve CODE)", id.DeviceID)
	}
	if id.Token == "" {
		return hub.Errorf(hub.EUNAUTHORIZED, "this hub requires a device token: the device gets one from the hub's OTA endpoint at boot "+
			"(reboot it), or send a configured device token as Authorization: Bearer <token>")
	}
	m := matchIdentity(t, known, id.ClientID, "", false)
	if m == other {
		s.identityRefused(where, id.DeviceID, t, id.ClientID, "", remote)
		return hub.Errorf(hub.EUNAUTHORIZED, "device %s is bound to another Client-Id than %q on this hub; if it was re-flashed, "+
			"re-bind it (xiaozhi-hub devices rebind %s, or approve the code it shows at its next boot)", id.DeviceID, id.ClientID, id.DeviceID)
	}
	if !verifyToken(s.secret, id.DeviceID, id.ClientID, t.Generation, id.Token) {
		why := "not signed by this hub for this device and Client-Id"
		if known && !t.Revoked.IsZero() {
			why = "revoked, or " + why
		}
		return hub.Errorf(hub.EUNAUTHORIZED, "the token of device %s is not accepted (%s): reboot the device so that it fetches a new one from the OTA endpoint",
			id.DeviceID, why)
	}
	if !known {
		s.makeRoomFor(ctx, id.DeviceID)
	}
	if m == unbound {
		// First connection under PolicyToken, or a record from before
		// Client-Id binding: the device is bound to this identity now.
		ok, err := s.bind(ctx, id.DeviceID, id.ClientID, "")
		if err != nil {
			return err
		}
		if !ok {
			return hub.Errorf(hub.EUNAUTHORIZED, "device %s was bound to another Client-Id meanwhile", id.DeviceID)
		}
	}
	return nil
}

func remoteHost(r *http.Request) string {
	if r == nil {
		return ""
	}
	return hub.Host(r.RemoteAddr)
}

// Revoke makes every token issued to the device so far invalid. With
// PolicyActivation it also withdraws the approval: the device gets a new
// code at its next boot. A live connection of the device is closed.
func (s *Service) Revoke(ctx context.Context, deviceID string) (Trust, error) {
	s.adminMu.Lock()
	defer s.adminMu.Unlock()
	t, err := s.knownTrust(deviceID)
	if err != nil {
		return Trust{}, err
	}
	t.DeviceID = deviceID
	t.Generation = newGeneration()
	t.Revoked = s.opts.Now().UTC()
	t.Approved = time.Time{}
	if err := s.opts.Store.SaveTrust(ctx, t); err != nil {
		return Trust{}, fmt.Errorf("revoke %s: %w", deviceID, err)
	}
	s.mu.Lock()
	cur := s.trust[deviceID]
	cur.DeviceID, cur.Generation, cur.Revoked, cur.Approved = deviceID, t.Generation, t.Revoked, t.Approved
	s.trust[deviceID] = cur
	s.pending.removeDevice(deviceID)
	s.mu.Unlock()
	if s.opts.Registry != nil {
		// A connection opened with a revoked token ends now, not whenever
		// the device next hangs up.
		s.opts.Registry.Disconnect(deviceID, "device tokens revoked")
	}
	s.log.Info("device tokens revoked", "device", deviceID)
	return cur, nil
}

// knownTrust is the device's trust record (its zero value for a device
// the registry knows that has none yet), or ENOTFOUND for a device the
// hub does not know. s.adminMu is held.
func (s *Service) knownTrust(deviceID string) (Trust, error) {
	s.mu.RLock()
	t, known := s.trust[deviceID]
	s.mu.RUnlock()
	if !known && s.opts.Registry != nil {
		if _, err := s.opts.Registry.Device(deviceID); err == nil {
			known = true
		}
	}
	if !known {
		return Trust{}, hub.Errorf(hub.ENOTFOUND, "device %q is not known to the hub", deviceID)
	}
	return t, nil
}

// TrustOf returns the device's record with its system info.
func (s *Service) TrustOf(ctx context.Context, deviceID string) (Trust, error) {
	t, err := s.opts.Store.Trust(ctx, deviceID)
	if err != nil {
		return Trust{}, err
	}
	return t, nil
}

// recordCheck persists what an admitted device reported, when the device
// is known: it has a trust record, or it has connected (it is in the
// registry). A check from a device that never connected stores nothing, so
// that checks with made-up ids cannot fill the disk. bindNow binds the
// device to the identity it presented (records from before binding). A
// failure is logged: the device must get its answer all the same.
func (s *Service) recordCheck(ctx context.Context, c checkInfo, bindNow bool) {
	s.mu.RLock()
	_, known := s.trust[c.deviceID]
	s.mu.RUnlock()
	if !known && s.opts.Registry != nil {
		_, err := s.opts.Registry.Device(c.deviceID)
		known = err == nil
	}
	if !known {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if bindNow && s.opts.Policy != PolicyOpen {
		if _, err := s.bind(ctx, c.deviceID, c.clientID, c.serial); err != nil {
			s.log.Warn("could not bind the device to its identity", "device", c.deviceID, "err", err)
		}
	}
	t := Trust{DeviceID: c.deviceID, ClientID: c.clientID, Board: c.board, Firmware: c.firmware,
		SystemInfo: c.systemInfo, LastCheck: c.at}
	if err := s.opts.Store.RecordCheck(ctx, t); err != nil {
		s.log.Warn("could not record the OTA check", "device", c.deviceID, "err", err)
		return
	}
	if s.opts.Registry != nil && c.systemInfo != nil {
		if err := s.opts.Registry.SetSystemInfo(ctx, c.deviceID, c.systemInfo); err != nil && hub.ErrorCode(err) != hub.ENOTFOUND {
			s.log.Warn("could not record the system info", "device", c.deviceID, "err", err)
		}
	}
	s.mu.Lock()
	cur := s.trust[c.deviceID]
	cur.DeviceID, cur.Board, cur.Firmware, cur.LastCheck = c.deviceID, c.board, c.firmware, c.at
	if cur.ClientID == "" {
		cur.ClientID = c.clientID
	}
	s.trust[c.deviceID] = cur
	s.mu.Unlock()
}

// ApplyTrust takes the decision part of t (identity binding, generation,
// approval, revocation, activation evidence, transport) as another node
// of the cluster decided it. A device whose tokens it ends is
// disconnected.
func (s *Service) ApplyTrust(ctx context.Context, t Trust) error {
	s.adminMu.Lock()
	defer s.adminMu.Unlock()
	s.mu.RLock()
	cur, known := s.trust[t.DeviceID]
	s.mu.RUnlock()
	next := cur
	next.DeviceID, next.ClientID, next.SerialNumber, next.Generation = t.DeviceID, t.ClientID, t.SerialNumber, t.Generation
	next.Approved, next.Revoked, next.Transport = t.Approved, t.Revoked, t.Transport
	next.ActivationVersion, next.ActivationHMAC = t.ActivationVersion, t.ActivationHMAC
	if known && decisionEqual(cur, next) {
		return nil
	}
	if err := s.opts.Store.SaveTrust(ctx, next); err != nil {
		return fmt.Errorf("apply trust of %s: %w", t.DeviceID, err)
	}
	s.mu.Lock()
	s.trust[t.DeviceID] = next
	if !next.Approved.IsZero() {
		s.pending.removeDevice(t.DeviceID)
	}
	s.mu.Unlock()
	ended := known && (cur.Generation != next.Generation || next.Revoked.After(cur.Revoked) || cur.ClientID != next.ClientID && cur.ClientID != "")
	if ended && s.opts.Registry != nil {
		s.opts.Registry.Disconnect(t.DeviceID, "the device's tokens were revoked or re-bound on another hub node")
	}
	return nil
}

func decisionEqual(a, b Trust) bool {
	return a.ClientID == b.ClientID && a.SerialNumber == b.SerialNumber && a.Generation == b.Generation &&
		a.Approved.Equal(b.Approved) && a.Revoked.Equal(b.Revoked) && a.Transport == b.Transport &&
		a.ActivationVersion == b.ActivationVersion && a.ActivationHMAC == b.ActivationHMAC
}

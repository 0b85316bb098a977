package ota

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/internal/refusals"
)

// A device's identity is more than its Device-Id, a MAC address anyone on
// the LAN can read. The firmware also sends a Client-Id, a random UUID it
// keeps in flash, on every OTA check and WebSocket connect, and version-2
// devices send their eFuse serial number on every OTA check. The trust
// record binds the device to the Client-Id (and serial) it presented when
// it was approved (PolicyActivation) or first connected (PolicyToken);
// tokens are signed over the Client-Id too. A check or a connection with
// the same Device-Id and another identity gets no token; it is recorded as
// an identity_refused event. A re-flashed device (new Client-Id) is bound
// again by approving the code it then shows, or by Rebind.
//
// Records without a Client-Id (written before binding existed, or by
// clients that send none) are bound at the device's next check or
// connection.

// maxClientID is the longest Client-Id the hub keeps (a UUID is 36).
const maxClientID = 128

type match int

const (
	unbound match = iota // no record, or a record with nothing to compare
	same
	other
)

// matchIdentity compares what a request presented with the device's
// binding. serial is compared only when checkSerial (the WebSocket request
// carries none).
func matchIdentity(t Trust, known bool, clientID, serial string, checkSerial bool) match {
	if !known || t.ClientID == "" && (t.SerialNumber == "" || !checkSerial) {
		return unbound
	}
	if t.ClientID != "" && clientID != t.ClientID {
		return other
	}
	if checkSerial && t.SerialNumber != "" && serial != t.SerialNumber {
		return other
	}
	return same
}

// identityRefused logs and records a request that presented the device's
// id with another identity.
//
// Both are limited per device and per source address (Options.Refusals):
// a request naming a device's MAC address costs nothing, so a flood of
// them must not replace the device's event history or fill the log.
func (s *Service) identityRefused(where, deviceID string, bound Trust, clientID, serial, remote string) {
	ok, skipped := s.opts.Refusals.Allow(s.opts.Now(), refusals.Address(hub.SourceKey(remote)), refusals.Device(deviceID))
	if !ok {
		return
	}
	clientID, serial = hub.Truncate([]byte(clientID), 200), hub.Truncate([]byte(serial), 200)
	s.log.Warn("device identity refused: the Device-Id is bound to another Client-Id or serial number",
		"device", deviceID, "where", where, "clientId", clientID, "boundClientId", bound.ClientID, "remote", remote, "unreportedBefore", skipped)
	if s.opts.Registry == nil {
		return
	}
	data := map[string]string{"where": where, "clientId": clientID, "boundClientId": bound.ClientID, "remoteAddr": remote}
	if skipped > 0 {
		data["unreportedBefore"] = strconv.Itoa(skipped)
	}
	if serial != bound.SerialNumber {
		data["serialNumber"], data["boundSerialNumber"] = serial, bound.SerialNumber
	}
	s.opts.Registry.Record(hub.EventIdentityRefused, deviceID, data)
}

// bind records clientID (and serial, when the record has none) as the
// device's identity when it has none yet. It reports false when another
// identity was bound meanwhile.
func (s *Service) bind(ctx context.Context, deviceID, clientID, serial string) (bool, error) {
	if clientID == "" && serial == "" {
		return true, nil // nothing to bind: a client that sends no Client-Id
	}
	s.adminMu.Lock()
	defer s.adminMu.Unlock()
	s.mu.RLock()
	t, known := s.trust[deviceID]
	s.mu.RUnlock()
	if m := matchIdentity(t, known, clientID, serial, serial != ""); m != unbound {
		return m == same, nil
	}
	t.DeviceID = deviceID
	if t.ClientID == "" {
		t.ClientID = clientID
	}
	if t.SerialNumber == "" {
		t.SerialNumber = serial
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := s.opts.Store.SaveTrust(ctx, t); err != nil {
		return false, fmt.Errorf("bind %s: %w", deviceID, err)
	}
	s.mu.Lock()
	cur := s.trust[deviceID]
	cur.DeviceID, cur.ClientID, cur.SerialNumber = deviceID, t.ClientID, t.SerialNumber
	s.trust[deviceID] = cur
	if !known {
		s.boundAt[deviceID] = s.opts.Now() // kept a while before the device registers (prune.go)
	}
	s.mu.Unlock()
	s.log.Info("device bound to its identity", "device", deviceID, "clientId", t.ClientID)
	return true, nil
}

// Rebind replaces the identity a device is bound to: with clientID (and
// serial) when given, else with whatever its next OTA check or connection
// presents. Every token issued before is invalidated and a live connection
// is closed. Approval is kept. For a device that was re-flashed (its
// Client-Id is new) and is refused: GET /api/devices/{id}/events shows the
// Client-Id it now presents.
func (s *Service) Rebind(ctx context.Context, deviceID, clientID, serial string) (Trust, error) {
	if len(clientID) > maxClientID {
		return Trust{}, hub.Errorf(hub.EBADREQUEST, "clientId is longer than %d characters", maxClientID)
	}
	serial = cleanSerial(serial)
	s.adminMu.Lock()
	defer s.adminMu.Unlock()
	s.mu.RLock()
	t, known := s.trust[deviceID]
	s.mu.RUnlock()
	if !known {
		return Trust{}, hub.Errorf(hub.ENOTFOUND, "device %q has no trust record on this hub: it is bound at its first "+
			"approval or connection, there is nothing to re-bind", deviceID)
	}
	t.ClientID, t.SerialNumber = clientID, serial
	t.Generation = newGeneration()
	if err := s.opts.Store.SaveTrust(ctx, t); err != nil {
		return Trust{}, fmt.Errorf("rebind %s: %w", deviceID, err)
	}
	s.mu.Lock()
	cur := s.trust[deviceID]
	cur.ClientID, cur.SerialNumber, cur.Generation = t.ClientID, t.SerialNumber, t.Generation
	s.trust[deviceID] = cur
	s.pending.removeDevice(deviceID)
	s.mu.Unlock()
	if s.opts.Registry != nil {
		s.opts.Registry.Disconnect(deviceID, "device identity re-bound")
		s.opts.Registry.Record(hub.EventDeviceRebound, deviceID, map[string]string{"clientId": clientID})
	}
	s.log.Info("device re-bound", "device", deviceID, "clientId", clientID)
	return cur, nil
}

package ota

import (
	"context"
	"encoding/json"
	"time"
)

// Language is the language a device reported at its OTA check (its
// system info's "language", e.g. "en-US": docs/protocol.md §2.1), from
// the registry, else from its trust record; "" when it never said.
func (s *Service) Language(deviceID string) string {
	if reg := s.opts.Registry; reg != nil {
		if d, err := reg.Device(deviceID); err == nil {
			if l := systemLanguage(d.SystemInfo); l != "" {
				return l
			}
		}
	}
	s.mu.RLock()
	_, known := s.trust[deviceID]
	s.mu.RUnlock()
	if !known {
		// No trust record, so no system info: a device that never made an
		// OTA check (as every device of a connect storm may be) costs no
		// read of the store.
		return ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	t, err := s.TrustOf(ctx, deviceID)
	if err != nil {
		return ""
	}
	return systemLanguage(t.SystemInfo)
}

// systemLanguage is the "language" of a device's system info, or "".
func systemLanguage(info json.RawMessage) string {
	var v struct {
		Language string `json:"language"`
	}
	if json.Unmarshal(info, &v) != nil || len(v.Language) > 16 {
		return ""
	}
	return v.Language
}

package hub

// NormalizeDeviceID is the one rule for comparing device ids: an id shaped
// like a MAC address (six pairs of hex digits separated by ':' or '-') is
// lower-cased, the way the firmware sends it (device-protocol.md §2.1), so
// that "DE:00:00:00:00:01" from a browser client and "de:00:00:00:00:01"
// from the device are the same device. Other ids are kept as they are:
// they are names a person chose, and case may matter to them.
func NormalizeDeviceID(id string) string {
	if !macShaped(id) {
		return id
	}
	b := []byte(id)
	for i, c := range b {
		if c >= 'A' && c <= 'F' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

func macShaped(s string) bool {
	if len(s) != 17 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if i%3 == 2 {
			if c != ':' && c != '-' || c != s[2] {
				return false
			}
			continue
		}
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

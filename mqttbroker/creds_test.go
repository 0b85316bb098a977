package mqttbroker

import (
	"encoding/json"
	"strings"
	"testing"

	hub "github.com/xiaozhi-hub/hub"
)

func TestCredentialsVerify(t *testing.T) {
	c, err := Issue(secret, "aa:bb:cc:dd:ee:ff", 3)
	if err != nil {
		t.Fatal(err)
	}
	if c.ClientID != "GID_xzhub@@@aa_bb_cc_dd_ee_ff@@@3" || c.Username != "aa:bb:cc:dd:ee:ff" {
		t.Fatalf("credentials %+v", c)
	}
	id, gen, ok := Verify(secret, c.ClientID, c.Username, c.Password)
	if !ok || id != "aa:bb:cc:dd:ee:ff" || gen != 3 {
		t.Fatalf("Verify = %q %d %v", id, gen, ok)
	}
	other, _ := Issue(secret, "aa:bb:cc:dd:ee:00", 3)
	for name, try := range map[string][3]string{
		"another device's client id": {other.ClientID, c.Username, c.Password},
		"another device's username":  {c.ClientID, other.Username, c.Password},
		"another device's password":  {c.ClientID, c.Username, other.Password},
		"another generation":         {strings.Replace(c.ClientID, "@@@3", "@@@4", 1), c.Username, c.Password},
		"generation with a sign":     {strings.Replace(c.ClientID, "@@@3", "@@@+3", 1), c.Username, c.Password},
		"no prefix":                  {strings.TrimPrefix(c.ClientID, "GID_xzhub"), c.Username, c.Password},
		"empty password":             {c.ClientID, c.Username, ""},
	} {
		if _, _, ok := Verify(secret, try[0], try[1], try[2]); ok {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, _, ok := Verify([]byte("another secret, another hub....."), c.ClientID, c.Username, c.Password); ok {
		t.Error("accepted under another secret")
	}
	if _, err := Issue(secret, "a/b", 1); hub.ErrorCode(err) != hub.EINVALID {
		t.Errorf("Issue for a device id with a topic separator: %v", err)
	}
	if _, err := Issue(secret, "a#", 1); hub.ErrorCode(err) != hub.EINVALID {
		t.Errorf("Issue for a device id with a wildcard: %v", err)
	}
}

// TestOTAObjectFitsTheFirmware checks what ota.cc does with the object:
// every member becomes an NVS key (at most 15 characters, string values at
// most 4000 bytes) and nothing is ever erased, so every member has a value.
func TestOTAObjectFitsTheFirmware(t *testing.T) {
	c, _ := Issue(secret, "aa:bb:cc:dd:ee:ff", 1)
	o, err := NewOTA("hub.local:1883", false, 0, c)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(o)
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	want := []string{"endpoint", "client_id", "username", "password", "publish_topic", "keepalive"}
	if len(m) != len(want) {
		t.Fatalf("members %v", m)
	}
	for _, k := range want {
		v, ok := m[k]
		if !ok || len(k) > 15 {
			t.Fatalf("member %q missing or too long for NVS: %s", k, b)
		}
		switch v := v.(type) {
		case string:
			if v == "" || len(v) >= 4000 {
				t.Fatalf("member %q = %q", k, v)
			}
		case float64:
			if v != DefaultKeepalive {
				t.Fatalf("keepalive %v", v)
			}
		default:
			t.Fatalf("member %q of type %T is ignored by the firmware", k, v)
		}
	}
	if o.PublishTopic != UplinkTopic("aa:bb:cc:dd:ee:ff") {
		t.Fatalf("publish_topic %q", o.PublishTopic)
	}

	for _, bad := range []struct {
		endpoint string
		tls      bool
		keep     int
	}{
		{"hub.local", false, 0},       // no port: the firmware assumes 8883 and TLS
		{"hub.local:mqtt", false, 0},  // std::stoi throws
		{"[::1]:1883", false, 0},      // split at the first ':'
		{"hub.local:8883", false, 0},  // TLS on 8883 whatever we think
		{"hub.local:1883", true, 0},   // no TLS anywhere else
		{"hub.local:1883", false, 5},  // keepalive too short
		{"hub.local:70000", false, 0}, // no such port
		{":1883", false, 0},           // no host
	} {
		if _, err := NewOTA(bad.endpoint, bad.tls, bad.keep, c); hub.ErrorCode(err) != hub.EINVALID {
			t.Errorf("NewOTA(%q, tls %v, keepalive %d) = %v", bad.endpoint, bad.tls, bad.keep, err)
		}
	}
	if _, err := NewOTA("mqtt.example.com:8883", true, 0, c); err != nil {
		t.Errorf("TLS on 8883: %v", err)
	}
}

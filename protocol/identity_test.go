package protocol_test

import (
	"net/http/httptest"
	"testing"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/protocol"
)

func TestParseIdentity(t *testing.T) {
	r := httptest.NewRequest("GET", "/xiaozhi/v1/", nil)
	r.Header.Set("Device-Id", "aa:bb:cc:dd:ee:ff")
	r.Header.Set("Client-Id", "7b94d69a-1b2c-4d5e-8f90-0123456789ab")
	r.Header.Set("Protocol-Version", "3")
	r.Header.Set("Authorization", "Bearer abc123")
	id, err := protocol.ParseIdentity(r)
	if err != nil || id.DeviceID != "aa:bb:cc:dd:ee:ff" || id.ProtocolVersion != 3 || id.Token != "abc123" || id.ClientID == "" {
		t.Fatalf("headers: %+v %v", id, err)
	}
	// Browser clients: the same values as query parameters, in any spelling.
	r = httptest.NewRequest("GET", "/xiaozhi/v1/?device_id=aa:bb:cc:dd:ee:01&Client-Id=c&protocol-version=2&token=tok", nil)
	id, err = protocol.ParseIdentity(r)
	if err != nil || id.DeviceID != "aa:bb:cc:dd:ee:01" || id.ProtocolVersion != 2 || id.Token != "tok" || id.ClientID != "c" {
		t.Fatalf("query: %+v %v", id, err)
	}
	// A browser client may send the MAC in upper case: the same device.
	r = httptest.NewRequest("GET", "/xiaozhi/v1/?device-id=AA:BB:CC:DD:EE:0F", nil)
	if id, err := protocol.ParseIdentity(r); err != nil || id.DeviceID != "aa:bb:cc:dd:ee:0f" {
		t.Fatalf("upper-case MAC: %+v %v", id, err)
	}
	// The firmware sends a token containing a space as it is (no "Bearer ").
	r = httptest.NewRequest("GET", "/xiaozhi/v1/", nil)
	r.Header.Set("Device-Id", "x")
	r.Header.Set("Authorization", "Token abc")
	if id, _ := protocol.ParseIdentity(r); id.Token != "Token abc" {
		t.Fatalf("token with a space: %q", id.Token)
	}
	for name, target := range map[string]string{
		"a service's name": "/xiaozhi/v1/?device-id=Service:calc",
		"missing id":       "/xiaozhi/v1/",
		"quote in id":      `/xiaozhi/v1/?device-id=a"b`,
		"slash in id":      "/xiaozhi/v1/?device-id=a%2Fb",
		"protocol 4":       "/xiaozhi/v1/?device-id=a&protocol-version=4",
		"protocol garbage": "/xiaozhi/v1/?device-id=a&protocol-version=v2",
	} {
		_, err := protocol.ParseIdentity(httptest.NewRequest("GET", target, nil))
		if hub.ErrorCode(err) != hub.EBADREQUEST || hub.ErrorMessage(err) == "" {
			t.Errorf("%s: want EBADREQUEST with a message, got %v", name, err)
		}
	}
}

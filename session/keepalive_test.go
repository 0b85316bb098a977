package session_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/xiaozhi-hub/hub/registry"
	"github.com/xiaozhi-hub/hub/session"
	"github.com/xiaozhi-hub/hub/store"
)

// A device that stops answering (power lost, half-open TCP) is found by the
// hub's pings and marked offline; one that answers stays.
func TestKeepaliveDropsSilentDevices(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "hub.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	reg := registry.New(st, registry.Options{})
	if err := reg.Load(ctx); err != nil {
		t.Fatal(err)
	}
	defer reg.Close()
	srv := session.New(session.Options{Registry: reg, PingInterval: 50 * time.Millisecond, PingTimeout: 100 * time.Millisecond})
	defer srv.Close()
	ts := httptest.NewServer(srv)
	defer ts.Close()
	url := "ws" + strings.TrimPrefix(ts.URL, "http") + "/xiaozhi/v1/"

	dial := func(id string) *websocket.Conn {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		c, _, err := websocket.Dial(cctx, url, &websocket.DialOptions{HTTPHeader: http.Header{"Device-Id": {id}}})
		if err != nil {
			t.Fatal(err)
		}
		c.Write(cctx, websocket.MessageText, []byte(`{"type":"hello","version":1,"transport":"websocket"}`))
		if _, _, err := c.Read(cctx); err != nil {
			t.Fatal(err)
		}
		return c
	}
	silent := dial("aa:00:00:00:00:01") // never reads again: never answers a ping
	defer silent.CloseNow()
	alive := dial("aa:00:00:00:00:02")
	defer alive.CloseNow()
	readCtx, stopReading := context.WithCancel(ctx)
	defer stopReading()
	go func() { // reading answers pings
		for {
			if _, _, err := alive.Read(readCtx); err != nil {
				return
			}
		}
	}()

	deadline := time.Now().Add(10 * time.Second)
	for {
		d, _ := reg.Device("aa:00:00:00:00:01")
		if !d.Online {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the silent device was never dropped")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if d, _ := reg.Device("aa:00:00:00:00:02"); !d.Online {
		t.Fatal("a device that answers pings must stay online")
	}
}

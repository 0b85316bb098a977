package session_test

import (
	"context"
	"net/http"
	"path/filepath"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/coder/websocket"
	"github.com/xiaozhi-hub/hub/internal/pipenet"
	"github.com/xiaozhi-hub/hub/registry"
	"github.com/xiaozhi-hub/hub/session"
	"github.com/xiaozhi-hub/hub/store"
)

// A device that stops answering (power lost, half-open TCP) is found by the
// hub's pings and marked offline; one that answers stays. The test runs in
// a synctest bubble over in-memory connections: time moves only when every
// goroutine waits, so a loaded machine cannot make the device that answers
// look silent.
func TestKeepaliveDropsSilentDevices(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		reg, client := bubbleHub(t, session.Options{PingInterval: 30 * time.Second, PingTimeout: 15 * time.Second})

		dial := func(id string) *websocket.Conn {
			c, _, err := websocket.Dial(ctx, "ws://hub/xiaozhi/v1/", &websocket.DialOptions{
				HTTPClient: client, HTTPHeader: http.Header{"Device-Id": {id}},
			})
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Write(ctx, websocket.MessageText, []byte(`{"type":"hello","version":1,"transport":"websocket"}`)); err != nil {
				t.Fatal(err)
			}
			if _, _, err := c.Read(ctx); err != nil {
				t.Fatal(err)
			}
			return c
		}
		silent := dial("aa:00:00:00:00:01") // never reads again: never answers a ping
		defer silent.CloseNow()
		alive := dial("aa:00:00:00:00:02")
		defer alive.CloseNow()
		readCtx, stopReading := context.WithCancel(ctx)
		var reading sync.WaitGroup
		reading.Go(func() { // reading answers pings
			for {
				if _, _, err := alive.Read(readCtx); err != nil {
					return
				}
			}
		})
		defer reading.Wait()
		defer stopReading()

		// Silence for longer than a ping interval plus a ping timeout.
		time.Sleep(2 * time.Minute)
		synctest.Wait()
		if d, _ := reg.Device("aa:00:00:00:00:01"); d.Online {
			t.Fatal("the silent device was never dropped")
		}
		if d, _ := reg.Device("aa:00:00:00:00:02"); !d.Online {
			t.Fatal("a device that answers pings must stay online")
		}
	})
}

// bubbleHub serves a session Server (opts, with a registry over a new
// store) over in-memory connections, for a test in a synctest bubble;
// the client dials it. All of it ends with the test.
func bubbleHub(t *testing.T, opts session.Options) (*registry.Registry, *http.Client) {
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "hub.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	reg := registry.New(st, registry.Options{})
	t.Cleanup(reg.Close)
	opts.Registry = reg
	srv := session.New(opts)
	t.Cleanup(srv.Close)
	l := pipenet.Listen()
	hs := &http.Server{Handler: srv}
	served := make(chan struct{})
	go func() { defer close(served); hs.Serve(l) }()
	t.Cleanup(func() { hs.Close(); <-served })
	client := &http.Client{Transport: &http.Transport{DialContext: l.DialContext}}
	t.Cleanup(client.CloseIdleConnections)
	return reg, client
}

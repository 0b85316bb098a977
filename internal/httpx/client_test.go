package httpx

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
)

// Twenty requests at once to a provider, twice: the second wave reuses
// the first wave's connections (Go's default transport keeps 2 and dials
// 18 again; against a real provider, 18 TLS handshakes).
func TestProvidersReuseConnectionsUnderLoad(t *testing.T) {
	var conns atomic.Int32
	release := make(chan struct{})
	var arrived sync.WaitGroup
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived.Done()
		<-release
		_, _ = io.WriteString(w, "ok")
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	client := &http.Client{Transport: PooledTransport()}
	defer client.CloseIdleConnections()
	wave := func() {
		var done sync.WaitGroup
		arrived.Add(20)
		for range 20 {
			done.Go(func() {
				res, err := client.Get(srv.URL)
				if err != nil {
					t.Error(err)
					return
				}
				_, _ = io.Copy(io.Discard, res.Body)
				res.Body.Close()
			})
		}
		arrived.Wait() // all 20 in flight at once
		release <- struct{}{}
		for range 19 {
			release <- struct{}{}
		}
		done.Wait()
	}
	wave()
	first := conns.Load()
	wave()
	if again := conns.Load() - first; first != 20 || again != 0 {
		t.Fatalf("connections: %d for the first wave, %d more for the second; want 20 and 0", first, again)
	}
}

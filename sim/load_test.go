package sim

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/xiaozhi-hub/hub/protocol"
)

// listAll pages through d's tools/list as the hub does (withUserTools) and
// returns the page sizes and the number of tools listed.
func listAll(t *testing.T, d *Device) (pages []int, tools int) {
	t.Helper()
	cursor := ""
	for range 100 {
		page, _, next, failed := listPage(d.tools, cursor, true)
		if failed {
			t.Fatalf("page %d failed at %q", len(pages)+1, next)
		}
		var p struct{ Tools []json.RawMessage }
		if err := json.Unmarshal([]byte(page+"]}"), &p); err != nil {
			t.Fatalf("page %d is not JSON: %v", len(pages)+1, err)
		}
		pages = append(pages, len(page)+2)
		tools += len(p.Tools)
		if next == "" {
			return pages, tools
		}
		cursor = next
	}
	t.Fatal("tools/list never ends")
	return nil, 0
}

func TestLoadProfilesPages(t *testing.T) {
	for _, tc := range []struct {
		profile      string
		pages, tools int
		screen       bool
	}{
		{ProfileSmall, 1, 2, false},
		{ProfileFirmware, 1, 7, true},
		{ProfileManyPages, ManyPagesPages, 7 + ManyPagesFillers, true},
	} {
		t.Run(tc.profile, func(t *testing.T) {
			cfg := Config{URL: "ws://127.0.0.1:1/xiaozhi/v1/"}
			if err := ApplyProfile(&cfg, tc.profile); err != nil {
				t.Fatal(err)
			}
			d := New(cfg)
			if err := FinishProfile(d, tc.profile); err != nil {
				t.Fatal(err)
			}
			pages, tools := listAll(t, d)
			if len(pages) != tc.pages || tools != tc.tools {
				t.Errorf("%d pages, %d tools; want %d pages, %d tools (page sizes %v)", len(pages), tools, tc.pages, tc.tools, pages)
			}
			for i, n := range pages {
				if n > maxListPayload {
					t.Errorf("page %d is %d bytes, over the firmware's %d", i+1, n, maxListPayload)
				}
			}
			if tc.profile == ProfileManyPages {
				for i, n := range pages[:len(pages)-1] {
					if n < 7000 {
						t.Errorf("page %d is only %d bytes; many-pages should fill pages of about 8 KB", i+1, n)
					}
				}
			}
			hasScreen := strings.Contains(strings.Join(d.ToolNames(), ","), "self.screen.")
			if hasScreen != tc.screen {
				t.Errorf("screen tools: %v, want %v", hasScreen, tc.screen)
			}
		})
	}
	if err := ApplyProfile(&Config{}, "huge"); err == nil {
		t.Error("unknown profile accepted")
	}
}

func TestLoopbackSources(t *testing.T) {
	got, err := LoopbackSources("ws://127.0.0.1:8000/xiaozhi/v1/", 3)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"127.0.0.2", "127.0.0.3", "127.0.0.4"}
	for i := range want {
		if got[i].String() != want[i] {
			t.Errorf("source %d = %s, want %s", i, got[i], want[i])
		}
	}
	if _, err := LoopbackSources("ws://192.0.2.1:8000/", 2); err == nil {
		t.Error("sources for a non-loopback hub accepted")
	}
	if _, err := LoopbackSources("ws://localhost:8000/", 2); err != nil {
		t.Errorf("localhost: %v", err)
	}
}

// helloHub answers every device's hello and records the source address of
// each connection; dropAfterHello closes connections right after the hello.
type helloHub struct {
	srv *httptest.Server

	mu      sync.Mutex
	sources map[string]int
	hellos  int
	kick    context.Context // ends every connection when cancelled
	dropAll context.CancelFunc
}

func newHelloHub(t *testing.T) *helloHub {
	h := &helloHub{sources: map[string]int{}}
	h.kick, h.dropAll = context.WithCancel(context.Background())
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		h.mu.Lock()
		ctx := h.kick
		h.mu.Unlock()
		if _, _, err := c.Read(ctx); err != nil {
			return
		}
		host, _, _ := net.SplitHostPort(r.RemoteAddr)
		h.mu.Lock()
		h.sources[host]++
		h.hellos++
		h.mu.Unlock()
		if err := c.Write(ctx, websocket.MessageText, protocol.ServerHello("s", protocol.DefaultDownlinkAudio)); err != nil {
			return
		}
		for {
			if _, _, err := c.Read(ctx); err != nil {
				return
			}
		}
	}))
	t.Cleanup(h.srv.Close)
	t.Cleanup(func() { h.drop() })
	return h
}

// drop ends every connection open now.
func (h *helloHub) drop() {
	h.mu.Lock()
	h.dropAll()
	h.kick, h.dropAll = context.WithCancel(context.Background())
	h.mu.Unlock()
}

func (h *helloHub) url() string { return "ws" + strings.TrimPrefix(h.srv.URL, "http") + "/xiaozhi/v1/" }

// eventually waits (generously; no timing is asserted) for cond.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting: %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestLoadConnectsFromSeveralSources(t *testing.T) {
	h := newHelloHub(t)
	var mu sync.Mutex
	seen := map[int]bool{}
	l, err := NewLoad(LoadConfig{
		URL: h.url(), Profile: ProfileSmall, Sources: 3, IDPrefix: "02:00",
		OnConnect: func(i int, took time.Duration) {
			mu.Lock()
			seen[i] = took > 0
			mu.Unlock()
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Stop()
	if err := l.Start(context.Background(), 30); err != nil {
		t.Fatal(err)
	}
	eventually(t, "30 devices connected", func() bool { return l.Stats().Connected == 30 })
	h.mu.Lock()
	if len(h.sources) != 3 || h.sources["127.0.0.2"] != 10 || h.sources["127.0.0.4"] != 10 {
		t.Errorf("connections by source: %v, want 10 from each of 127.0.0.2..4", h.sources)
	}
	h.mu.Unlock()
	mu.Lock()
	if len(seen) != 30 || !seen[0] || !seen[29] {
		t.Errorf("OnConnect saw %d devices", len(seen))
	}
	mu.Unlock()
	devs := l.Devices()
	if devs[0].ID() != "02:00:00:00:00:01" || devs[29].ID() != "02:00:00:00:00:1e" {
		t.Errorf("ids %s … %s", devs[0].ID(), devs[29].ID())
	}
	// More devices can be added to a running load.
	if err := l.Start(context.Background(), 5); err != nil {
		t.Fatal(err)
	}
	eventually(t, "35 devices connected", func() bool { return l.Stats().Connected == 35 })
	l.Stop()
	if st := l.Stats(); st.Connected != 0 || st.Devices != 35 {
		t.Errorf("after Stop: %+v", st)
	}
}

func TestLoadChurnReconnects(t *testing.T) {
	h := newHelloHub(t)
	l, err := NewLoad(LoadConfig{
		URL: h.url(), Churn: 40 * time.Millisecond,
		ReconnectMin: 5 * time.Millisecond, ReconnectMax: 20 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Stop()
	if err := l.Start(context.Background(), 5); err != nil {
		t.Fatal(err)
	}
	eventually(t, "devices dropped and reconnected", func() bool {
		st := l.Stats()
		return st.Drops >= 10 && st.Connects >= 15
	})
}

func TestLoadRampAndCap(t *testing.T) {
	h := newHelloHub(t)
	l, err := NewLoad(LoadConfig{URL: h.url(), Rate: 2000, MaxDialing: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Stop()
	if err := l.Start(context.Background(), 10); err != nil {
		t.Fatal(err)
	}
	eventually(t, "10 devices connected", func() bool { return l.Stats().Connected == 10 })
	if _, err := NewLoad(LoadConfig{URL: h.url(), Profile: "nope"}); err == nil {
		t.Error("unknown profile accepted")
	}
	if _, err := NewLoad(LoadConfig{URL: "ws://192.0.2.1/", Sources: 2}); err == nil {
		t.Error("several sources for a remote hub accepted")
	}
}

func TestLoadCountsFailuresAndLostConnections(t *testing.T) {
	h := newHelloHub(t)
	var refused sync.Map
	inner := h.srv.Config.Handler
	h.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, seen := refused.LoadOrStore(r.Header.Get("Device-Id"), true); !seen {
			http.Error(w, "not yet", http.StatusServiceUnavailable) // every device's first attempt fails
			return
		}
		inner.ServeHTTP(w, r)
	})
	l, err := NewLoad(LoadConfig{URL: h.url(), ReconnectMin: 5 * time.Millisecond, ReconnectMax: 20 * time.Millisecond, MaxDialing: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Stop()
	if err := l.Start(context.Background(), 8); err != nil {
		t.Fatal(err)
	}
	eventually(t, "8 devices connected after a failed attempt each", func() bool {
		st := l.Stats()
		return st.Connected == 8 && st.Failures >= 8
	})
	h.drop() // the hub drops everyone: they reconnect
	eventually(t, "devices back", func() bool {
		st := l.Stats()
		return st.Connects >= 16 && st.Connected == 8
	})
}

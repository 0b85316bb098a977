package dashboard_test

// The dashboard is tested in a real browser: headless Chromium from the
// distribution's packages (/usr/bin/chromium, installed by .ci/run),
// driven over the DevTools protocol by chromedp, against a real hub on
// loopback with simulated devices. Screenshots go to $XZ_ARTIFACTS (or the
// test's temporary directory), never into the repository.

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/xiaozhi-hub/hub/server"
	"github.com/xiaozhi-hub/hub/server/servertest"
	"github.com/xiaozhi-hub/hub/sim"
)

// chromium returns the browser to run: $XZ_CHROMIUM, /usr/bin/chromium or
// chromium on the PATH. Without one the test fails under CI (CI=true),
// where .ci/run installs it, and is skipped elsewhere.
func chromium(t *testing.T) string {
	t.Helper()
	for _, p := range []string{os.Getenv("XZ_CHROMIUM"), "/usr/bin/chromium"} {
		if p != "" {
			if _, err := os.Stat(p); err == nil {
				return p
			}
		}
	}
	if p, err := exec.LookPath("chromium"); err == nil {
		return p
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("Chromium is not installed: .ci/run installs it with apt-get install chromium")
	}
	t.Skip("Chromium is not installed (apt-get install chromium, or set XZ_CHROMIUM); skipping the browser tests")
	return ""
}

// browser is one headless Chromium tab on a hub's dashboard.
type browser struct {
	t   *testing.T
	ctx context.Context
	url string

	mu     sync.Mutex
	errors []string // the page's uncaught exceptions and console errors
}

// newBrowser starts Chromium with the given viewport width and language
// (navigator.languages) and opens the dashboard of the hub at url.
func newBrowser(t *testing.T, url string, width int, lang string) *browser {
	t.Helper()
	exe := chromium(t)
	// Not t.TempDir: Chromium's helper processes may still write to the
	// profile for a moment after the browser is gone, which fails
	// TempDir's cleanup. Removed after the browser (cleanups run last
	// registered first), retrying while they finish.
	profile, err := os.MkdirTemp("", "xz-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for range 50 {
			if os.RemoveAll(profile) == nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Logf("could not remove the browser profile %s", profile)
	})
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(exe),
		chromedp.UserDataDir(profile),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("lang", lang),
		chromedp.Flag("accept-lang", lang),
		chromedp.WindowSize(width, 900),
	}
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelB := chromedp.NewContext(actx, chromedp.WithErrorf(t.Logf))
	ctx, cancelT := context.WithTimeout(ctx, 90*time.Second)
	t.Cleanup(func() { cancelT(); cancelB(); cancelA() })
	b := &browser{t: t, ctx: ctx, url: url}
	chromedp.ListenTarget(ctx, func(ev any) {
		var msg string
		switch ev := ev.(type) {
		case *runtime.EventExceptionThrown:
			msg = ev.ExceptionDetails.Text
			if ev.ExceptionDetails.Exception != nil {
				msg += " " + ev.ExceptionDetails.Exception.Description
			}
		case *runtime.EventConsoleAPICalled:
			if ev.Type != runtime.APITypeError {
				return
			}
			for _, a := range ev.Args {
				msg += " " + string(a.Value) + a.Description
			}
		default:
			return
		}
		b.mu.Lock()
		defer b.mu.Unlock()
		if len(b.errors) < 20 {
			b.errors = append(b.errors, msg)
		}
	})
	b.run(
		emulation.SetDeviceMetricsOverride(int64(width), 900, 1, width < 600),
		emulation.SetUserAgentOverride("Mozilla/5.0 (X11; Linux x86_64) Chrome headless test").WithAcceptLanguage(lang),
		emulation.SetLocaleOverride().WithLocale(lang),
		chromedp.Navigate(url+"/"),
		chromedp.WaitReady("#token", chromedp.ByQuery),
	)
	return b
}

func (b *browser) run(actions ...chromedp.Action) {
	b.t.Helper()
	if err := chromedp.Run(b.ctx, actions...); err != nil {
		b.t.Fatalf("browser: %v", err)
	}
}

// eval returns the value of a JavaScript expression.
func (b *browser) eval(js string, out any) {
	b.t.Helper()
	b.run(chromedp.Evaluate(js, out))
}

// waitJS polls a JavaScript boolean expression until it is true, for at
// most 20 s; what names the wait in the failure.
func (b *browser) waitJS(what, js string) {
	b.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		var ok bool
		if err := chromedp.Run(b.ctx, chromedp.Evaluate("!!("+js+")", &ok)); err == nil && ok {
			return
		}
		if time.Now().After(deadline) {
			b.shot("timeout")
			b.mu.Lock()
			errs := strings.Join(b.errors, "\n")
			b.mu.Unlock()
			if errs != "" {
				b.t.Logf("the page's errors:\n%s", errs)
			}
			b.t.Fatalf("waited 20 s for %s (%s)", what, js)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// login enters the admin token as a person does and waits for the list.
func (b *browser) login() {
	b.t.Helper()
	b.run(
		chromedp.SendKeys("#token", servertest.Token, chromedp.ByQuery),
		chromedp.Click("#save", chromedp.ByQuery),
	)
	b.waitJS("the device list", `document.querySelector("#status").textContent !== ""`)
}

// shot saves a full-page screenshot as an artifact.
func (b *browser) shot(name string) {
	b.t.Helper()
	dir := os.Getenv("XZ_ARTIFACTS")
	if dir == "" {
		dir = b.t.TempDir()
	}
	var png []byte
	if err := chromedp.Run(b.ctx, chromedp.FullScreenshot(&png, 100)); err != nil {
		b.t.Logf("screenshot %s: %v", name, err)
		return
	}
	file := filepath.Join(dir, strings.ReplaceAll(b.t.Name(), "/", "_")+"-"+name+".png")
	if err := os.WriteFile(file, png, 0o644); err != nil {
		b.t.Logf("screenshot %s: %v", name, err)
		return
	}
	b.t.Logf("screenshot: %s", file)
}

// startHub runs a real hub (device-auth open unless edit says otherwise).
func startHub(t *testing.T, edit func(*server.Config)) *server.Hub {
	h, _ := servertest.Start(t, edit)
	return h
}

// connect starts a simulated device against h; it is closed at cleanup.
func connect(t *testing.T, h *server.Hub, cfg sim.Config) *sim.Device {
	t.Helper()
	cfg.URL = h.DeviceURL()
	d := sim.New(cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := d.Connect(ctx); err != nil {
		t.Fatalf("device %s connect: %v", cfg.DeviceID, err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// waitFor polls cond for at most 20 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited 20 s for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

package server_test

import (
	"bufio"
	"context"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/xiaozhi-hub/hub/sim"
)

// hubBinary builds the hub's command once per test.
func hubBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := filepath.Join(t.TempDir(), "xiaozhi-hub")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/xiaozhi-hub").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	return bin
}

// runHubBinary starts the binary on dir and returns it with its address.
func runHubBinary(t *testing.T, bin, dir, token string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(bin, "--listen", "127.0.0.1:0", "--data-dir", dir, "--api-token", token, "--log-format", "text", "--device-auth", "open")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	addr := make(chan string, 1)
	go func() {
		re := regexp.MustCompile(`msg="hub listening" addr=(\S+)`)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				addr <- m[1]
			}
		}
	}()
	select {
	case a := <-addr:
		return cmd, a
	case <-time.After(30 * time.Second):
		t.Fatal("the hub did not start")
		return nil, ""
	}
}

// TestAnsweredCallsSurviveKill9: every call answered 200 is in the call
// history after kill -9 and a restart, including the last one.
func TestAnsweredCallsSurviveKill9(t *testing.T) {
	bin := hubBinary(t)
	dir := t.TempDir()
	const token = "kill9-token-0123456789"
	cmd, addr := runHubBinary(t, bin, dir, token)
	base := "http://" + addr
	d := sim.New(sim.Config{URL: "ws://" + addr + "/xiaozhi/v1/", DeviceID: "aa:00:00:00:0c:09"})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := d.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	waitFor(t, "tools cached", func() bool {
		st, body := callURL(t, token, "GET", base+"/api/devices/"+d.ID()+"/tools")
		return st == 200 && body["stale"] == false
	})
	const n = 150 // within the device's message burst
	for i := range n {
		st, body := callURL(t, token, "POST", base+"/api/devices/"+d.ID()+"/tools/self.get_device_status/call", map[string]any{"arguments": map[string]any{}})
		if st != 200 {
			t.Fatalf("call %d: %d %v", i, st, body)
		}
	}
	if err := cmd.Process.Kill(); err != nil { // SIGKILL right after the last 200
		t.Fatal(err)
	}
	cmd.Wait()

	_, addr = runHubBinary(t, bin, dir, token)
	st, body := callURL(t, token, "GET", "http://"+addr+"/api/calls?limit=1000")
	calls, _ := body["calls"].([]any)
	if st != 200 || len(calls) != n {
		t.Fatalf("after kill -9: %d, %d calls recorded of %d answered", st, len(calls), n)
	}
}

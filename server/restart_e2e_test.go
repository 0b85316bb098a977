package server_test

import (
	"bufio"
	"context"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/xiaozhi-hub/hub/sim"
)

func TestRestartRestoresFromSQLite(t *testing.T) {
	dir := t.TempDir()
	h := startHub(t, dir, nil)
	d := h.device(sim.Config{DeviceID: "aa:00:00:00:0c:01", Lamp: true})
	want := toolNames(h.readyTools(d.ID()))
	iotDev := h.device(sim.Config{DeviceID: "aa:00:00:00:0c:02", Mode: sim.ModeIoT})
	waitFor(t, "the lamp's state", func() bool {
		th := h.thing(iotDev.ID(), "Lamp")
		return th != nil && th["state"].(map[string]any)["power"] != nil
	})
	if st, _ := h.call("PATCH", "/api/devices/"+d.ID(), map[string]any{"name": "吸顶灯", "room": "客厅", "aliases": []string{"ceiling light"}}); st != 200 {
		t.Fatalf("patch = %d", st)
	}
	d.Close()
	iotDev.Close()
	h.stop()

	h2 := startHub(t, dir, nil)
	_, dev := h2.call("GET", "/api/devices/"+d.ID(), nil)
	if dev["name"] != "吸顶灯" || dev["room"] != "客厅" || dev["online"] != false || dev["board"] == "" {
		t.Fatalf("after restart: %v", dev)
	}
	_, body := h2.call("GET", "/api/devices/"+d.ID()+"/tools", nil)
	if got := toolNames(body["tools"].([]any)); !slices.Equal(got, want) {
		t.Fatalf("tools after restart %v, want %v", got, want)
	}
	if th := h2.thing(iotDev.ID(), "Lamp"); th == nil || th["state"].(map[string]any)["power"] == nil {
		t.Fatalf("IoT state after restart: %v", th)
	}
}

// TestKill9KeepsTheCache runs the real binary, kills it with SIGKILL once a
// device's tools are cached, and starts it again on the same data.
func TestKill9KeepsTheCache(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := filepath.Join(t.TempDir(), "xiaozhi-hub")
	build := exec.Command("go", "build", "-o", bin, "../cmd/xiaozhi-hub")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	dir := t.TempDir()
	const token = "kill9-token-0123456789"
	start := func() (*exec.Cmd, string) {
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
	cmd, addr := start()
	base := "http://" + addr
	d := sim.New(sim.Config{URL: "ws://" + addr + "/xiaozhi/v1/", DeviceID: "aa:00:00:00:0c:03"})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := d.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var n int
	waitFor(t, "tools cached", func() bool {
		st, body := callURL(t, token, "GET", base+"/api/devices/"+d.ID()+"/tools")
		tools, _ := body["tools"].([]any)
		n = len(tools)
		return st == 200 && body["stale"] == false && n > 0
	})
	if err := cmd.Process.Kill(); err != nil { // SIGKILL: no shutdown code runs
		t.Fatal(err)
	}
	cmd.Wait()

	_, addr = start()
	st, body := callURL(t, token, "GET", "http://"+addr+"/api/devices/"+d.ID()+"/tools")
	tools, _ := body["tools"].([]any)
	if st != 200 || len(tools) != n {
		t.Fatalf("after kill -9: %d, %d tools, want %d", st, len(tools), n)
	}
}

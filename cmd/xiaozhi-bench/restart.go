package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/xiaozhi-hub/hub/sim"
)

// runRestart connects N devices (reconnecting fast), kills the hub with
// SIGKILL, starts it again on the same data directory and port, and times
// the way back: listening, API answering, cached tools served, a first
// call, every device online, every device's tools re-listed.
func runRestart(e *env) (*RestartResult, error) {
	ctx, n := e.ctx, e.opts.restartDevices
	if e.opts.transport == "mqtt" {
		// The restarted hub's broker gets a new port on loopback, which the
		// devices were not told: TestMQTTDeviceCacheServedAfterRestart
		// covers the MQTT restart instead.
		return nil, errors.New("the restart scenario runs with --transport websocket only")
	}
	h, err := e.hub("restart")
	if err != nil {
		return nil, err
	}
	l, err := e.load(h, "", func(c *sim.LoadConfig) {
		c.ReconnectMin, c.ReconnectMax = 50*time.Millisecond, 500*time.Millisecond
	})
	if err != nil {
		h.stop()
		return nil, err
	}
	defer l.Stop()
	e.progress("restart: connecting %d devices", n)
	if err := l.Start(ctx, n); err != nil {
		h.stop()
		return nil, err
	}
	if err := e.waitReady(h, n, 120*time.Second); err != nil {
		h.stop()
		return nil, err
	}
	time.Sleep(time.Second)
	ids := deviceIDs(l)
	res := &RestartResult{Devices: n}

	e.progress("restart: kill -9 hub (pid %d)", h.pid())
	t0 := time.Now()
	h.kill()
	h2, err := startHub(ctx, hubOptions{
		listen: h.listenAddr(), dataDir: h.dataDir, token: h.token, logLevel: e.opts.hubLogLevel, memLimit: e.opts.hubMemLimit,
		logFile: h.dataDir + "/hub.log", pprof: true, mqtt: h.mqtt != "",
	})
	if err != nil {
		return nil, fmt.Errorf("restart hub: %w", err)
	}
	defer h2.stop()
	res.Listening = time.Since(t0).Seconds()
	e.prof.start(ctx, h2, "restart")
	defer e.prof.stop(ctx, h2)

	since := func(t time.Time) float64 { return t.Sub(t0).Seconds() }
	poll := func(what string, cond func() (bool, error)) (float64, error) {
		at, err := waitFor(ctx, 120*time.Second, 10*time.Millisecond, what, cond)
		return since(at), err
	}
	if res.APIUp, err = poll("API up", func() (bool, error) {
		code, _, err := h2.apiGet(ctx, "/healthz")
		return code == http.StatusOK, err
	}); err != nil {
		return res, err
	}
	if res.ToolsServed, err = poll("cached tools served", func() (bool, error) {
		code, body, err := h2.apiGet(ctx, "/api/devices")
		if err != nil || code != http.StatusOK {
			return false, err
		}
		var list struct {
			Devices []struct {
				ToolCount int `json:"toolCount"`
			} `json:"devices"`
		}
		if err := json.Unmarshal(body, &list); err != nil {
			return false, err
		}
		cached := 0
		for _, d := range list.Devices {
			if d.ToolCount > 0 {
				cached++
			}
		}
		if res.CachedAtAPIUp == 0 {
			res.CachedAtAPIUp = cached
		}
		return cached >= n, nil
	}); err != nil {
		return res, err
	}
	rc := newRESTCaller(h2, ids[:1], 1)
	defer rc.close()
	if res.FirstCall, err = poll("first call", func() (bool, error) {
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		err := rc.call(cctx, 0)
		if err != nil {
			rc.client.close() // a connection from before the restart is dead
		}
		return err == nil, err
	}); err != nil {
		return res, err
	}
	var lastDisc int64
	if res.AllOnline, err = poll("all online", func() (bool, error) {
		conn, disc, err := h2.state(ctx)
		lastDisc = disc
		return err == nil && conn >= int64(n), err
	}); err != nil {
		return res, err
	}
	if lastDisc >= int64(n) {
		res.AllRelisted = res.AllOnline
	} else if res.AllRelisted, err = poll("all re-listed", func() (bool, error) {
		_, disc, err := h2.state(ctx)
		return err == nil && disc >= int64(n), err
	}); err != nil {
		return res, err
	}
	e.progress("restart: API %.2f s, all online %.2f s, all re-listed %.2f s", res.APIUp, res.AllOnline, res.AllRelisted)
	return res, nil
}

package main

import (
	"bufio"
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/xiaozhi-hub/hub/asr"
	"github.com/xiaozhi-hub/hub/sim"
)

// talkTurnPeriod is the length of one turn of a device that talks without
// pause: 1.2 s of speech and a 1 s answer (BenchmarkTurns' figure). One
// core holds talkTurnPeriod ÷ (hub CPU per turn) such talkers.
const talkTurnPeriod = 2200 * time.Millisecond

// TalkResult is the talk scenario: push-to-talk devices over WebSocket
// speaking to a hub whose providers (stand-ins in the bench process)
// answer at once.
type TalkResult struct {
	Profile      string    `json:"profile"`
	ASRAudio     string    `json:"asrAudio"` // the hub's asr-audio: what the recognizer was sent
	SpeechS      float64   `json:"speechPerTurnS"`
	TurnPeriodS  float64   `json:"turnPeriodS"` // of talkers per core = turnPeriodS ÷ hub CPU per turn
	ScheduleS    float64   `json:"scheduleS"`   // each device starts a turn every scheduleS
	Rounds       int       `json:"turnsPerDevice"`
	WarmupRounds int       `json:"warmupTurnsPerDevice"` // not in the figures
	Runs         []TalkRun `json:"runs"`
}

// TalkRun is one hub, Devices devices, their turns ending at the same
// instant (Sync) or spread evenly over the schedule.
type TalkRun struct {
	Devices int  `json:"devices"`
	Sync    bool `json:"sync"`
	Answers int  `json:"answers"` // measured turns answered to the end (tts stop)
	Failed  int  `json:"failed"`  // measured turns without an answer or with an error
	Dry     int  `json:"dryAnswers"`
	// DryAt counts the dry answers by their first late frame (1: the
	// second frame of the answer came more than 60 ms after the first).
	DryAt           map[int]int `json:"dryAtFrame,omitempty"`
	Misordered      int         `json:"misorderedMessages"`
	FramesPerAnswer float64     `json:"framesPerAnswer"`
	FirstAudio      Latency     `json:"firstAudio"` // listen stop sent → first audio frame received
	// HubCPU is the hub's utime+stime over the measured rounds; per turn
	// it is divided by the turns started in them (devices × rounds).
	HubCPU          float64 `json:"hubCpuS"`
	HubCPUPerTurnMs float64 `json:"hubCpuPerTurnMs"`
	TalkersPerCore  float64 `json:"talkersPerCore"`
	GenCPUPerTurnMs float64 `json:"generatorCpuPerTurnMs"`
	// HubAllocs and HubAllocKB are the hub's heap allocations per turn
	// over the same rounds: unlike CPU time they do not depend on what
	// else runs on the machine.
	HubAllocs  float64 `json:"hubAllocsPerTurn"`
	HubAllocKB float64 `json:"hubAllocKBPerTurn"`
	// RSS as the OS reports it (VmRSS), no forced GC: with no device, with
	// the devices connected before their first turn, and the most while
	// they talk; per talker: (talking − no device) ÷ devices.
	RSSNoDevice       int64   `json:"rssNoDeviceBytes"`
	RSSConnected      int64   `json:"rssConnectedBytes"`
	RSSTalking        int64   `json:"rssTalkingMaxBytes"`
	RSSPerTalkerKB    float64 `json:"rssPerTalkerKB"`
	RSSPerConnectedKB float64 `json:"rssPerConnectedDeviceKB"`
	GoroutinesIdle    int     `json:"goroutinesConnected"`
	GoroutinesTalking int     `json:"goroutinesTalkingMax"`
	ProviderCalls     [3]int  `json:"providerCalls"` // transcriptions, chats, speeches over the run
	// ProviderConns is the connections the hub opened to the providers
	// over the run (a client that keeps them alive opens few).
	ProviderConns int `json:"providerConns"`
	// Uploads counts the transcriptions' files by format (wav, ogg), and
	// OggPackets the Opus packets in the Ogg ones, over the run.
	Uploads    map[string]int `json:"uploads"`
	OggPackets int            `json:"oggPackets,omitempty"`
}

// talkSummary turns the outcomes of the measured turns into figures.
func talkSummary(run *TalkRun, outs []turnOutcome, failed int) {
	run.Failed = failed
	var first []time.Duration
	frames := 0
	for _, o := range outs {
		run.Answers++
		if o.dryAt > 0 {
			run.Dry++
			if run.DryAt == nil {
				run.DryAt = map[int]int{}
			}
			run.DryAt[o.dryAt]++
		}
		run.Misordered += o.misordered
		frames += o.frames
		first = append(first, o.firstAudio)
	}
	if run.Answers > 0 {
		run.FramesPerAnswer = float64(frames) / float64(run.Answers)
	}
	slices.Sort(first)
	run.FirstAudio = summarize(first)
}

// runTalk runs the talk scenario for each device count, each with a fresh
// hub, against one set of stand-in providers.
func runTalk(e *env) (*TalkResult, error) {
	speech, err := spokenTone()
	if err != nil {
		return nil, err
	}
	st, err := startStandIn()
	if err != nil {
		return nil, err
	}
	defer st.close()
	o := e.opts
	res := &TalkResult{Profile: o.profile, ASRAudio: cmp.Or(o.talkASRAudio, asr.AudioWAV), SpeechS: (time.Duration(len(speech)) * uplinkFrame).Seconds(),
		TurnPeriodS: talkTurnPeriod.Seconds(), ScheduleS: o.talkSchedule.Seconds(), Rounds: o.talkTurns, WarmupRounds: 1}
	for _, n := range o.talkDevices {
		run, err := talkRun(e, st, speech, n)
		if run != nil {
			res.Runs = append(res.Runs, *run)
		}
		if err != nil {
			return res, err
		}
	}
	return res, st.err()
}

// talkRun starts a fresh hub, connects n talkers and runs their turns.
func talkRun(e *env, st *standIn, speech [][]byte, n int) (*TalkRun, error) {
	ctx, o := e.ctx, e.opts
	mode := "spread"
	if o.talkSync {
		mode = "sync"
	}
	name := fmt.Sprintf("talk-%d-%s", n, mode)
	h, err := e.hub(name, func(ho *hubOptions) { ho.providers, ho.asrAudio = st.baseURL(), o.talkASRAudio })
	if err != nil {
		return nil, err
	}
	defer h.stop()
	calls0, conns0 := [3]int64{st.transcriptions.Load(), st.chats.Load(), st.speeches.Load()}, st.conns.Load()
	wav0, ogg0, packets0 := st.wavFiles.Load(), st.oggFiles.Load(), st.oggPackets.Load()
	time.Sleep(time.Second) // settled, as the idle scenario's baseline
	run := &TalkRun{Devices: n, Sync: o.talkSync, RSSNoDevice: h.rss()}

	talkers := make([]*talker, n)
	for i := range talkers {
		id, err := sim.MAC("02:7a:00", i+1)
		if err != nil {
			return nil, err
		}
		cfg := sim.Config{URL: h.deviceURL(), DeviceID: id}
		if err := sim.ApplyProfile(&cfg, o.profile); err != nil {
			return nil, err
		}
		talkers[i] = newTalker(cfg, speech)
		if err := sim.FinishProfile(talkers[i].dev, o.profile); err != nil {
			return nil, err
		}
	}
	defer func() {
		for _, t := range talkers {
			_ = t.dev.Close()
		}
	}()
	var connecting sync.WaitGroup
	errs := make([]error, n)
	for i, t := range talkers {
		connecting.Go(func() {
			cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			errs[i] = t.dev.Connect(cctx)
		})
	}
	connecting.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("connect: %w", err)
		}
	}
	if err := e.waitReady(h, n, 60*time.Second); err != nil {
		return nil, err
	}
	time.Sleep(time.Second)
	run.RSSConnected = h.rss()
	run.GoroutinesIdle, _ = h.goroutines(ctx)

	sched := o.talkSchedule
	start := time.Now().Add(200 * time.Millisecond)
	winStart, winEnd := start.Add(sched), start.Add(time.Duration(o.talkTurns)*sched)
	type result struct {
		outs   []turnOutcome
		failed int
		err    error
	}
	results := make([]result, n)
	var talking sync.WaitGroup
	for i, t := range talkers {
		offset := time.Duration(0)
		if !o.talkSync {
			offset = time.Duration(i) * sched / time.Duration(n)
		}
		talking.Go(func() {
			r := &results[i]
			for k := range o.talkTurns {
				out, err := t.turn(ctx, start.Add(time.Duration(k)*sched+offset), 15*time.Second)
				switch {
				case ctx.Err() != nil:
					r.err = ctx.Err()
					return
				case k == 0: // warm-up
				case err != nil:
					r.failed++
					if r.err == nil {
						r.err = fmt.Errorf("device %s turn %d: %w", t.dev.ID(), k, err)
					}
				default:
					r.outs = append(r.outs, out)
				}
			}
		})
	}
	// The measured window: rounds 2..R of the schedule.
	if err := sleepUntil(ctx, winStart); err != nil {
		talking.Wait()
		return nil, err
	}
	m0, _ := h.metrics(ctx)
	cpu0, gen0 := h.cpu(), selfCPU()
	e.prof.start(ctx, h, name)
	// Mid-answer in a round in the middle: 1.2 s of speech, then the answer.
	heapAt := start.Add(time.Duration(1+(o.talkTurns-1)/2)*sched + 1900*time.Millisecond)
	for time.Now().Before(winEnd) && ctx.Err() == nil {
		if !heapAt.IsZero() && time.Now().After(heapAt) {
			e.prof.liveHeap(ctx, h, name)
			heapAt = time.Time{}
		}
		run.RSSTalking = max(run.RSSTalking, h.rss())
		if g, err := h.goroutines(ctx); err == nil {
			run.GoroutinesTalking = max(run.GoroutinesTalking, g)
		}
		_ = sleepUntil(ctx, time.Now().Add(100*time.Millisecond))
	}
	cpu, gen := h.cpu()-cpu0, selfCPU()-gen0
	m1, _ := h.metrics(ctx)
	e.prof.stop(ctx, h)
	talking.Wait()
	e.prof.snapshot(ctx, h, name, "allocs") // after the RSS readings: it collects garbage first

	var outs []turnOutcome
	failed := 0
	var firstErr error
	for _, r := range results {
		outs = append(outs, r.outs...)
		failed += r.failed
		if firstErr == nil {
			firstErr = r.err
		}
	}
	talkSummary(run, outs, failed)
	turns := n * (o.talkTurns - 1)
	run.HubCPU = cpu.Seconds()
	if turns > 0 && cpu > 0 {
		perTurn := cpu / time.Duration(turns)
		run.HubCPUPerTurnMs = ms(perTurn)
		run.TalkersPerCore = talkTurnPeriod.Seconds() / perTurn.Seconds()
		run.GenCPUPerTurnMs = ms(gen / time.Duration(turns))
		if m0 != nil && m1 != nil {
			run.HubAllocs = (m1.get("go_memstats_mallocs_total") - m0.get("go_memstats_mallocs_total")) / float64(turns)
			run.HubAllocKB = (m1.get("go_memstats_alloc_bytes_total") - m0.get("go_memstats_alloc_bytes_total")) / float64(turns) / 1024
		}
	}
	run.RSSPerTalkerKB = float64(run.RSSTalking-run.RSSNoDevice) / float64(n) / 1024
	run.RSSPerConnectedKB = float64(run.RSSConnected-run.RSSNoDevice) / float64(n) / 1024
	for i, c := range []int64{st.transcriptions.Load(), st.chats.Load(), st.speeches.Load()} {
		run.ProviderCalls[i] = int(c - calls0[i])
	}
	run.ProviderConns = int(st.conns.Load() - conns0)
	run.Uploads = map[string]int{"wav": int(st.wavFiles.Load() - wav0), "ogg": int(st.oggFiles.Load() - ogg0)}
	run.OggPackets = int(st.oggPackets.Load() - packets0)
	e.progress("talk: %d devices (%s): %d answers, %d failed, %d dry, first audio p50 %s p99 %s; hub CPU %.2f ms/turn = %.0f talkers/core; RSS %.0f KB per talker; %d goroutines talking",
		n, mode, run.Answers, run.Failed, run.Dry, msf(run.FirstAudio.P50), msf(run.FirstAudio.P99),
		run.HubCPUPerTurnMs, run.TalkersPerCore, run.RSSPerTalkerKB, run.GoroutinesTalking)
	if failed > 0 {
		e.note("talk %d %s: %d turns failed, first: %v", n, mode, failed, firstErr)
	}
	if ctx.Err() != nil {
		return run, ctx.Err()
	}
	return run, nil
}

// goroutines reads the hub's goroutine count from its bench controls.
func (h *hubProc) goroutines(ctx context.Context) (int, error) {
	resp, err := h.benchGet(ctx, "/bench/runtime")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "/sched/goroutines:goroutines "); ok {
			var g int
			_, err := fmt.Sscan(v, &g)
			return g, err
		}
	}
	return 0, fmt.Errorf("/bench/runtime: no goroutine count")
}

// rows adds the talk scenario's lines to the summary table.
func (x *TalkResult) rows(row func(...string)) {
	for i, r := range x.Runs {
		scen := ""
		if i == 0 {
			scen = "talk"
		}
		mode := "spread"
		if r.Sync {
			mode = "ending at once"
		}
		row(scen, fmt.Sprintf("%d talkers, %s", r.Devices, mode),
			fmt.Sprintf("%d answers, %d failed, %d dry (by first late frame %v), %d misordered; first audio p50 %s p99 %s",
				r.Answers, r.Failed, r.Dry, r.DryAt, r.Misordered, msf(r.FirstAudio.P50), msf(r.FirstAudio.P99)))
		row("", "", fmt.Sprintf("hub CPU %.2f ms/turn = %.0f talkers/core (%.1f s ÷ CPU per turn); RSS %.0f KB/talker (%.0f KB/connected device); goroutines %d → %d",
			r.HubCPUPerTurnMs, r.TalkersPerCore, x.TurnPeriodS, r.RSSPerTalkerKB, r.RSSPerConnectedKB, r.GoroutinesIdle, r.GoroutinesTalking))
		row("", "", fmt.Sprintf("hub allocations %.0f, %.0f KB per turn", r.HubAllocs, r.HubAllocKB))
		row("", "", fmt.Sprintf("provider requests %d/%d/%d (recognition/model/synthesis) over %d connections; asr-audio %s: %d WAV and %d Ogg files (%d packets)",
			r.ProviderCalls[0], r.ProviderCalls[1], r.ProviderCalls[2], r.ProviderConns, x.ASRAudio, r.Uploads["wav"], r.Uploads["ogg"], r.OggPackets))
	}
}

// targets adds issue 20's targets for voice under load.
func (x *TalkResult) targets(add func(name, goal, got string, ok bool)) {
	for _, r := range x.Runs {
		who := fmt.Sprintf("%d %s", r.Devices, map[bool]string{true: "at once", false: "spread"}[r.Sync])
		if r.Sync {
			add("talk dry", "no answer runs dry with 50 turns ending at once",
				fmt.Sprintf("%d of %d dry, %d failed (%s)", r.Dry, r.Answers, r.Failed, who), r.Devices >= 50 && r.Dry == 0 && r.Failed == 0)
			add("talk first audio", "listen stop → first audio p99 ≤ 250 ms, 50 at once",
				fmt.Sprintf("p99 %s (%s)", msf(r.FirstAudio.P99), who), r.Devices >= 50 && r.FirstAudio.P99 <= 250)
		} else {
			add("talkers per core", "≥ 300 talkers per core with 100 spread",
				fmt.Sprintf("%.0f (%.2f ms/turn, %s)", r.TalkersPerCore, r.HubCPUPerTurnMs, who), r.Devices >= 100 && r.TalkersPerCore >= 300)
		}
		add("talk memory", "≤ 200 KB RSS per talking device",
			fmt.Sprintf("%.0f KB (%s)", r.RSSPerTalkerKB, who), r.RSSPerTalkerKB <= 200)
	}
}

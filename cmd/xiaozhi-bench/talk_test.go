package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestMain lets the talk scenario's test start this test binary as its hub
// child, as the bench re-executes itself.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "hub" {
		if err := hubMain(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "hub:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// frames returns arrival times at these offsets (ms) from t0.
func frames(t0 time.Time, offsets ...int) []time.Time {
	var out []time.Time
	for _, o := range offsets {
		out = append(out, t0.Add(time.Duration(o)*time.Millisecond))
	}
	return out
}

// A device plays from the first frame on, one per 60 ms: an answer runs dry
// when a frame comes after the one before it has finished playing, however
// early the frames before were.
func TestDryAt(t *testing.T) {
	t0 := time.Now()
	for _, tc := range []struct {
		name    string
		offsets []int
		at      int
	}{
		{"one frame", []int{0}, 0},
		{"paced exactly", []int{0, 60, 120, 180}, 0},
		{"all at once", []int{0, 0, 0, 0}, 0},
		{"a burst then on time", []int{0, 1, 2, 180}, 0},
		{"second frame late", []int{0, 61}, 1},
		{"late after a lead", []int{0, 1, 2, 3, 241}, 4},
		{"late then caught up", []int{0, 130, 131, 132}, 1},
	} {
		if got := dryAt(frames(t0, tc.offsets...), 60*time.Millisecond); got != tc.at {
			t.Errorf("%s: dry at %d, want %d", tc.name, got, tc.at)
		}
	}
}

// A turn's outcome: first audio from listen stop, dry, and the messages out
// of the order the firmware needs (stt, tts start, sentence_start, audio,
// tts stop).
func TestTurnRecord(t *testing.T) {
	t0 := time.Now()
	r := &turnRecord{stop: t0}
	r.text("stt", "")
	r.text("llm", "")
	r.text("tts", "start")
	r.text("tts", "sentence_start")
	for _, at := range frames(t0, 200, 260, 400) {
		r.audio(at)
	}
	r.text("tts", "sentence_start")
	r.audio(t0.Add(460 * time.Millisecond))
	r.text("tts", "stop")
	out, err := r.outcome()
	if err != nil || out.firstAudio != 200*time.Millisecond || out.frames != 4 || out.dryAt != 2 || out.misordered != 0 {
		t.Fatalf("%+v %v", out, err)
	}

	bad := &turnRecord{stop: t0}
	bad.audio(t0) // before tts start
	bad.text("tts", "start")
	bad.text("stt", "") // after tts start
	bad.text("tts", "sentence_start")
	bad.text("tts", "start") // again
	if out, err := bad.outcome(); err == nil || bad.misordered != 3 {
		t.Errorf("%+v %v, misordered %d", out, err, bad.misordered)
	}
	if _, err := (&turnRecord{}).outcome(); err == nil {
		t.Error("a turn without tts stop has an outcome")
	}
	silent := &turnRecord{}
	silent.text("tts", "start")
	silent.text("tts", "stop")
	if _, err := silent.outcome(); err == nil {
		t.Error("an answer without audio has an outcome")
	}
}

func TestTalkSummaryAndTargets(t *testing.T) {
	var outs []turnOutcome
	for i := 1; i <= 100; i++ {
		outs = append(outs, turnOutcome{firstAudio: time.Duration(150+i) * time.Millisecond, frames: 17, dryAt: i / 50})
	}
	run := TalkRun{Devices: 50, Sync: true, RSSPerTalkerKB: 150}
	talkSummary(&run, outs, 1)
	if run.Answers != 100 || run.Failed != 1 || run.Dry != 51 || run.DryAt[1] != 50 || run.DryAt[2] != 1 || run.FramesPerAnswer != 17 ||
		run.FirstAudio.P50 != 200 || run.FirstAudio.P99 != 249 {
		t.Fatalf("%+v", run)
	}
	x := &TalkResult{TurnPeriodS: 2.2, Runs: []TalkRun{run, {Devices: 100, TalkersPerCore: 310, RSSPerTalkerKB: 250}}}
	got := map[string]bool{}
	x.targets(func(name, _, what string, ok bool) { got[name+" "+what] = ok })
	want := map[string]bool{
		"talk dry 51 of 100 dry, 1 failed (50 at once)":   false,
		"talk first audio p99 249 ms (50 at once)":        true,
		"talk memory 150 KB (50 at once)":                 true,
		"talkers per core 310 (0.00 ms/turn, 100 spread)": true,
		"talk memory 250 KB (100 spread)":                 false,
	}
	if len(got) != len(want) {
		t.Errorf("targets %v", got)
	}
	for k, v := range want {
		if ok, found := got[k]; !found || ok != v {
			t.Errorf("target %q: %v (found %v); all %v", k, ok, found, got)
		}
	}
}

// The scenario end to end, tiny: two push-to-talk devices, a hub child and
// the stand-in providers; every measured turn is answered in order.
func TestTalkScenario(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a hub")
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "talk.json")
	var stdout, stderr strings.Builder
	err := run(t.Context(), []string{"--scenarios", "talk", "--talk-devices", "2", "--talk-turns", "2", "--talk-sync",
		"--talk-schedule", "2.5s", "--work-dir", dir, "--json", out}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var rep Report
	if err := json.Unmarshal(b, &rep); err != nil || rep.Talk == nil || len(rep.Talk.Runs) != 1 {
		t.Fatalf("%v %s", err, b)
	}
	r := rep.Talk.Runs[0]
	// One measured turn each (the first is a warm-up); a second of speech
	// is 17 frames of 60 ms; each turn asks each provider once.
	if r.Answers != 2 || r.Failed != 0 || r.Misordered != 0 || r.FramesPerAnswer != 17 ||
		r.ProviderCalls != [3]int{4, 4, 4} || r.HubCPU <= 0 || r.RSSTalking <= 0 {
		t.Errorf("%+v", r)
	}
	if !strings.Contains(stdout.String(), "2 talkers, ending at once") {
		t.Errorf("table:\n%s", stdout.String())
	}
}

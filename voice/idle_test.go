package voice

import (
	"bytes"
	"fmt"
	"runtime/pprof"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// goroutines counts the goroutines of the calling goroutine's synctest
// bubble, and the goroutines labelled voice=turn (a conversation being
// spoken in or answered).
func goroutines(t *testing.T) (all, turns int) {
	t.Helper()
	var b bytes.Buffer
	if err := pprof.Lookup("goroutine").WriteTo(&b, 2); err != nil {
		t.Fatal(err)
	}
	// The dump starts with the calling goroutine, "goroutine N [running,
	// synctest bubble B]:".
	bubble := ""
	for line := range strings.Lines(b.String()) {
		i := strings.Index(line, "synctest bubble ")
		if !strings.HasPrefix(line, "goroutine ") || i < 0 {
			continue
		}
		bb, _, _ := strings.Cut(line[i:], "]")
		if bubble == "" {
			bubble = bb
		}
		if bb == bubble {
			all++
		}
	}
	if bubble == "" {
		t.Fatal("not in a synctest bubble")
	}
	// debug=1 groups goroutines: "<count> @ <pcs>", then "# labels: {…}".
	b.Reset()
	if err := pprof.Lookup("goroutine").WriteTo(&b, 1); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(b.String(), "\n")
	for i := 1; i < len(lines); i++ {
		if strings.HasPrefix(lines[i], "# labels:") && strings.Contains(lines[i], `"voice":"turn"`) {
			var k int
			if _, err := fmt.Sscanf(lines[i-1], "%d @", &k); err != nil {
				t.Fatalf("goroutine profile line %q: %v", lines[i-1], err)
			}
			turns += k
		}
	}
	return all, turns
}

// Devices listening in auto mode with nobody speaking (half of them
// sending the room's silence, as firmware does, half sending nothing)
// hold no goroutine of their conversations. One that is spoken to holds
// one while the person speaks, three while the answer is written (the
// turn, the model's and the one that sends its audio paced), and none
// once the turn has ended; and the
// silence limit still ends every conversation.
func TestListeningHoldsNoGoroutine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		br := &brain{hold: make(chan struct{})}
		var recs records
		e := New(Options{Codec: pcmCodec{}, Recognizer: &recognizer{}, Synthesizer: synthesizer{}, Brain: br, OnTurn: recs.add,
			NewVAD: func() VAD { return &levelVAD{} }})
		defer e.Close()
		before, _ := goroutines(t)
		const devices = 200
		var convs []*Conversation
		var outs []*output
		for i := range devices {
			out := newOutput()
			c := e.Open(fmt.Sprintf("aa:00:00:00:%02x:%02x", i/256, i%256), "zh", down, out)
			defer c.Close()
			c.Listen("start", "auto", "")
			if i%2 == 0 {
				for range 20 {
					c.Audio(speechFrame(0), 0)
				}
			}
			convs, outs = append(convs, c), append(outs, out)
		}
		synctest.Wait()
		if n, _ := goroutines(t); n != before {
			t.Fatalf("%d devices listening in silence: %d goroutines, %d before", devices, n, before)
		}
		if n := e.Active(); n != devices {
			t.Fatalf("%d conversations open, want %d", n, devices)
		}

		c, out := convs[0], outs[0]
		for range 3 {
			c.Audio(speechFrame(500), 0)
		}
		synctest.Wait()
		if n, turns := goroutines(t); n != before+1 || turns != 1 {
			t.Fatalf("a person speaking: %d goroutines (%d before), %d labelled voice=turn; want one more, labelled", n, before, turns)
		}
		for range 3 {
			c.Audio(speechFrame(0), 0) // the end of speech
		}
		synctest.Wait() // the model holds its answer
		if n, turns := goroutines(t); n != before+3 || turns != 3 {
			t.Fatalf("an answer being written: %d goroutines (%d before), %d labelled voice=turn; want three more (the turn, the model's, the audio's), labelled", n, before, turns)
		}
		close(br.hold)
		out.waitFor(t, `"state":"stop"`)
		if r := recs.last(t); r.Outcome != "ok" {
			t.Fatalf("turn record %+v", r)
		}
		synctest.Wait()
		if n, _ := goroutines(t); n != before {
			t.Fatalf("after the turn: %d goroutines, %d before", n, before)
		}

		time.Sleep(2 * e.opts.Silence) // nobody speaks any more
		for i, o := range outs {
			select {
			case r := <-o.ended:
				if !strings.Contains(r, "no speech") {
					t.Fatalf("conversation %d ended: %s", i, r)
				}
			default:
				t.Fatalf("conversation %d was not ended by the silence limit", i)
			}
		}
		if n := e.Active(); n != 0 {
			t.Fatalf("%d conversations still open", n)
		}
	})
}

// An engine closed while a person is speaking (its conversation still
// open) ends the utterance's goroutine: Close returns.
func TestEngineCloseMidUtterance(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := New(Options{Codec: pcmCodec{}, Recognizer: &recognizer{}, Synthesizer: synthesizer{}, Brain: &brain{}})
		c := e.Open("aa:00:00:00:00:43", "zh", down, newOutput())
		defer c.Close()
		c.Listen("start", "manual", "")
		c.Audio(speechFrame(500), 0)
		synctest.Wait()
		e.Close() // a goroutine left waiting would make the bubble deadlock
	})
}

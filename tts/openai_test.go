package tts

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/voice/driver"
)

func server(t *testing.T, handle func(w http.ResponseWriter, r *http.Request)) *OpenAI {
	srv := httptest.NewServer(http.HandlerFunc(handle))
	t.Cleanup(srv.Close)
	return &OpenAI{BaseURL: srv.URL + "/v1", APIKey: "sk-test", Model: "kokoro", Voice: "zf_xiaoxiao"}
}

func readAll(t *testing.T, s driver.Speech) []int16 {
	var all []int16
	for {
		pcm, err := s.Read(context.Background())
		if errors.Is(err, io.EOF) {
			return all
		}
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, pcm...)
	}
}

// The request is OpenAI's; the PCM is streamed in whatever pieces the
// server sends (here, odd byte counts), and arrives whole.
func TestSpeechStreams(t *testing.T) {
	const samples = 24000
	o := server(t, func(w http.ResponseWriter, r *http.Request) {
		var req map[string]any
		_ = json.NewDecoder(r.Body).Decode(&req)
		if r.URL.Path != "/v1/audio/speech" || r.Header.Get("Authorization") != "Bearer sk-test" ||
			req["model"] != "kokoro" || req["voice"] != "zf_bei" || req["input"] != "你好。" || req["response_format"] != "pcm" {
			t.Errorf("request %s %v", r.URL.Path, req)
		}
		w.Header().Set("Content-Type", "audio/pcm")
		b := make([]byte, 2*samples)
		for i := range samples {
			binary.LittleEndian.PutUint16(b[2*i:], uint16(int16(i)))
		}
		for i := 0; i < len(b); i += 777 {
			w.Write(b[i:min(i+777, len(b))])
			w.(http.Flusher).Flush()
		}
	})
	s, err := o.Synthesize(context.Background(), "你好。", "zf_bei")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	all := readAll(t, s)
	if len(all) != samples || all[1234] != 1234 || s.SampleRate() != 24000 {
		t.Fatalf("%d samples, sample 1234 = %d", len(all), all[1234])
	}
}

func TestSpeechFailures(t *testing.T) {
	o := server(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(400)
		w.Write([]byte(`{"error":{"message":"voice not found"}}`))
	})
	if _, err := o.Synthesize(context.Background(), "x", ""); hub.ErrorCode(err) != hub.EUNAVAILABLE || !strings.Contains(err.Error(), "voice not found") {
		t.Fatalf("400: %v", err)
	}
	o = server(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"detail":"use response_format mp3"}`))
	})
	if _, err := o.Synthesize(context.Background(), "x", ""); hub.ErrorCode(err) != hub.EUNAVAILABLE || !strings.Contains(err.Error(), "instead of PCM") {
		t.Fatalf("JSON instead of audio: %v", err)
	}
	// A server that never stops is cut off; one that stalls ends with the context.
	o = server(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "audio/pcm")
		for r.Context().Err() == nil {
			if _, err := w.Write(make([]byte, 4800)); err != nil {
				return
			}
		}
	})
	o.MaxSpeech = 500 * time.Millisecond
	s, err := o.Synthesize(context.Background(), "x", "")
	if err != nil {
		t.Fatal(err)
	}
	var rerr error
	for n := 0; rerr == nil && n < 10000; n++ {
		_, rerr = s.Read(context.Background())
	}
	s.Close()
	if hub.ErrorCode(rerr) != hub.EUNAVAILABLE || !strings.Contains(rerr.Error(), "cut off") {
		t.Fatalf("endless speech: %v", rerr)
	}
	o = server(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "audio/pcm")
		w.Write(make([]byte, 100))
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	s, err = o.Synthesize(ctx, "x", "")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for {
		if _, err := s.Read(ctx); err != nil {
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("stalled stream: %v", err)
			}
			break
		}
	}
}

// Samples split across pieces of any size come out whole and in order,
// and a stream's chunks cost no allocation once its buffer has grown.
func TestPCMJoin(t *testing.T) {
	var want []int16
	var stream []byte
	for i := range 3000 {
		want = append(want, int16(i*7-9000))
		stream = binary.LittleEndian.AppendUint16(stream, uint16(int16(i*7-9000)))
	}
	var p pcmJoin
	var got []int16
	for _, n := range []int{1, 2, 3, 1000, 999, 7, 1, 1, 1988} {
		got = append(got, p.samples(stream[:n])...)
		stream = stream[n:]
	}
	got = append(got, p.samples(stream)...)
	if !slices.Equal(got, want) {
		t.Fatalf("%d samples joined, want %d, or not the ones sent", len(got), len(want))
	}
	piece := make([]byte, 4801)
	allocs := testing.AllocsPerRun(50, func() { p.samples(piece) })
	if allocs > 0 {
		t.Errorf("a piece of a stream cost %.1f allocations", allocs)
	}
}

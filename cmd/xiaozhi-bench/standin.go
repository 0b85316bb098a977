package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/xiaozhi-hub/hub/ogg"
	"github.com/xiaozhi-hub/hub/wav"
)

// standInKey is the API key the hub is given for the stand-in providers.
const standInKey = "sk-bench"

// The stand-in's answer, as BenchmarkTurns' (voice/bench_test.go): one
// sentence, and one second of speech for it.
const (
	standInHeard    = "打开客厅的灯"
	standInSentence = "好的，客厅的灯已经打开了。"
	speechRate      = 24000 // what OpenAI's speech API sends with response_format pcm
)

// standIn serves the providers a talking hub calls, in this process (not
// the hub's) on 127.0.0.1, over their real wire formats (OpenAI-compatible,
// as asr/openai.go, agent's OpenAI client and tts/openai.go call them), and
// answers at once: POST /v1/audio/transcriptions → {"text":…}, POST
// /v1/chat/completions → the sentence streamed as SSE, POST
// /v1/audio/speech → one second of 24 kHz s16le PCM.
type standIn struct {
	srv    *http.Server
	ln     net.Listener
	served sync.WaitGroup
	pcm    []byte // one second of a voice-like tone, s16le

	transcriptions, chats, speeches, failures atomic.Int64
	// wavFiles and oggFiles count the transcriptions' files that were
	// read through, oggPackets the Opus packets in the Ogg ones.
	wavFiles, oggFiles, oggPackets atomic.Int64
	// conns counts the connections the hub opened to the providers.
	conns atomic.Int64
}

// startStandIn listens on 127.0.0.1 and serves until close.
func startStandIn() (*standIn, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &standIn{ln: ln, pcm: toneSeconds(1)}
	s.srv = &http.Server{Handler: http.HandlerFunc(s.serve), ReadHeaderTimeout: 10 * time.Second,
		ConnState: func(_ net.Conn, st http.ConnState) {
			if st == http.StateNew {
				s.conns.Add(1)
			}
		}}
	s.served.Go(func() { _ = s.srv.Serve(ln) })
	return s, nil
}

// baseURL is what the hub's provider settings point at.
func (s *standIn) baseURL() string { return "http://" + s.ln.Addr().String() + "/v1" }

func (s *standIn) close() {
	_ = s.srv.Shutdown(context.Background())
	s.served.Wait()
}

func (s *standIn) serve(w http.ResponseWriter, r *http.Request) {
	// The whole request is read, as a real provider does; a
	// transcription's file is checked.
	var err error
	if r.URL.Path == "/v1/audio/transcriptions" {
		err = s.checkFile(r)
	} else {
		_, err = io.Copy(io.Discard, r.Body)
	}
	if r.Method != http.MethodPost || r.Header.Get("Authorization") != "Bearer "+standInKey || err != nil {
		s.failures.Add(1)
		http.Error(w, "stand-in: unexpected request", http.StatusBadRequest)
		return
	}
	switch r.URL.Path {
	case "/v1/audio/transcriptions":
		s.transcriptions.Add(1)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"text":%q}`, standInHeard)
	case "/v1/chat/completions":
		s.chats.Add(1)
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":%q},\"finish_reason\":null}]}\n\n", standInSentence)
		fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n")
		fmt.Fprint(w, "data: [DONE]\n\n")
	case "/v1/audio/speech":
		s.speeches.Add(1)
		w.Header().Set("Content-Type", "audio/pcm")
		_, _ = w.Write(s.pcm)
	default:
		s.failures.Add(1)
		http.NotFound(w, r)
	}
}

// checkFile reads a transcription's form and checks its file as a server
// would: a WAV file's header and length, or an Ogg Opus file page by page
// (checksums, sequence, granule positions, each packet's framing).
func (s *standIn) checkFile(r *http.Request) error {
	if err := r.ParseMultipartForm(1 << 22); err != nil {
		return err
	}
	f, hdr, err := r.FormFile("file")
	if err != nil {
		return err
	}
	defer f.Close()
	if strings.HasSuffix(hdr.Filename, ".ogg") {
		b, err := io.ReadAll(f)
		if err != nil {
			return err
		}
		st, err := ogg.Read(b)
		if err != nil {
			return err
		}
		if hdr.Header.Get("Content-Type") != "audio/ogg" || st.Channels != 1 || len(st.Packets) == 0 {
			return fmt.Errorf("an Ogg upload of type %q, %d channels, %d packets", hdr.Header.Get("Content-Type"), st.Channels, len(st.Packets))
		}
		s.oggFiles.Add(1)
		s.oggPackets.Add(int64(len(st.Packets)))
		return nil
	}
	pcm, rate, err := wav.Decode(f, 1<<22)
	if err != nil {
		return err
	}
	if rate != 16000 || len(pcm) == 0 {
		return fmt.Errorf("a WAV upload of %d samples at %d Hz", len(pcm), rate)
	}
	s.wavFiles.Add(1)
	return nil
}

// toneSeconds is n seconds of a 300 Hz tone at speechRate, s16le (what
// server/talk_e2e_test.go's stand-in synthesises).
func toneSeconds(n int) []byte {
	samples := speechRate * n
	b := make([]byte, 2*samples)
	for i := range samples {
		binary.LittleEndian.PutUint16(b[2*i:], uint16(int16(6000*math.Sin(2*math.Pi*300*float64(i)/speechRate))))
	}
	return b
}

// errStandIn reports requests the stand-in did not expect.
func (s *standIn) err() error {
	if n := s.failures.Load(); n > 0 {
		return fmt.Errorf("stand-in providers: %d unexpected requests", n)
	}
	return nil
}

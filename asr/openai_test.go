package asr

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/wav"
)

// stand-in transcription server: checks the request as OpenAI's API
// defines it and answers as it does.
func server(t *testing.T, handle func(w http.ResponseWriter, r *http.Request)) *OpenAI {
	srv := httptest.NewServer(http.HandlerFunc(handle))
	t.Cleanup(srv.Close)
	return &OpenAI{BaseURL: srv.URL + "/v1", APIKey: "sk-test", Model: "whisper-large-v3", Timeout: 2 * time.Second}
}

func TestTranscription(t *testing.T) {
	sent := make([]int16, 16000) // one second
	for i := range sent {
		sent[i] = int16(i % 1000)
	}
	o := server(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/audio/transcriptions" || r.Header.Get("Authorization") != "Bearer sk-test" {
			t.Errorf("request %s %s auth %q", r.Method, r.URL.Path, r.Header.Get("Authorization"))
		}
		if err := r.ParseMultipartForm(1 << 20); err != nil {
			t.Fatal(err)
		}
		if r.FormValue("model") != "whisper-large-v3" || r.FormValue("language") != "zh" || r.FormValue("response_format") != "json" {
			t.Errorf("form %v", r.MultipartForm.Value)
		}
		f, hdr, err := r.FormFile("file")
		if err != nil || !strings.HasSuffix(hdr.Filename, ".wav") {
			t.Fatalf("file: %v", err)
		}
		pcm, rate, err := wav.Decode(f, 1<<20)
		if err != nil || rate != 16000 || !slices.Equal(pcm, sent) {
			t.Errorf("the uploaded audio is not what was said: %d samples at %d Hz, %v", len(pcm), rate, err)
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"text":" 打开客厅的灯 "}`))
	})
	u, _ := o.Start(context.Background(), "zh-CN")
	for i := 0; i < len(sent); i += 960 {
		u.Write(sent[i:min(i+960, len(sent))])
	}
	text, err := u.Finish(context.Background())
	if err != nil || text != "打开客厅的灯" {
		t.Fatalf("Finish = %q %v", text, err)
	}
}

// Failures are EUNAVAILABLE errors that say what the provider said.
func TestTranscriptionFailures(t *testing.T) {
	for name, c := range map[string]struct {
		handle func(w http.ResponseWriter, r *http.Request)
		want   string
	}{
		"500": {func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(500)
			w.Write([]byte(`{"error":{"message":"model overloaded"}}`))
		}, "answered 500: model overloaded"},
		"garbage": {func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("<html>hi</html>")) }, "not a transcription"},
		"hangs": {func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body) // so that the server notices the client leaving
			select {
			case <-r.Context().Done():
			case <-time.After(10 * time.Second):
			}
		}, "deadline exceeded"},
	} {
		t.Run(name, func(t *testing.T) {
			o := server(t, c.handle)
			u, _ := o.Start(context.Background(), "")
			u.Write(make([]int16, 960))
			_, err := u.Finish(context.Background())
			if hub.ErrorCode(err) != hub.EUNAVAILABLE || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Finish: %v, want %q", err, c.want)
			}
		})
	}
	// Nothing said: no request at all.
	o := server(t, func(w http.ResponseWriter, r *http.Request) { t.Error("a request for no audio") })
	u, _ := o.Start(context.Background(), "")
	if text, err := u.Finish(context.Background()); text != "" || err != nil {
		t.Fatal(text, err)
	}
}

// A device that never stops talking costs bounded memory.
func TestUtteranceIsBounded(t *testing.T) {
	o := &OpenAI{MaxAudio: time.Second}
	u, _ := o.Start(context.Background(), "")
	for range 100 {
		u.Write(make([]int16, 16000))
	}
	if n := len(u.(*upload).samples()) / 2; n != 16000 {
		t.Fatalf("kept %d samples", n)
	}
}

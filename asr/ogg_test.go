package asr

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/xiaozhi-hub/hub/ogg"
	"github.com/xiaozhi-hub/hub/voice/driver"
)

// packet60 is a 60 ms SILK packet (TOC config 11, code 0) of n bytes.
func packet60(n int, fill byte) []byte {
	p := bytes.Repeat([]byte{fill}, n)
	p[0] = 11 << 3
	return p
}

// With asr-audio ogg-opus the device's packets are uploaded as they were
// sent, in an Ogg Opus file named audio.ogg of type audio/ogg, in the same
// form as a WAV upload; the recognizer says it takes Opus.
func TestTranscriptionOggOpus(t *testing.T) {
	var sent [][]byte
	for i := range 20 {
		sent = append(sent, packet60(90+i, byte(i)))
	}
	o := server(t, func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseMultipartForm(1 << 20); err != nil {
			t.Fatal(err)
		}
		if r.FormValue("model") != "whisper-large-v3" || r.FormValue("language") != "zh" || r.FormValue("response_format") != "json" {
			t.Errorf("form %v", r.MultipartForm.Value)
		}
		f, hdr, err := r.FormFile("file")
		if err != nil {
			t.Fatalf("file: %v", err)
		}
		if hdr.Filename != "audio.ogg" || hdr.Header.Get("Content-Type") != "audio/ogg" {
			t.Errorf("file %q of type %q", hdr.Filename, hdr.Header.Get("Content-Type"))
		}
		b, _ := io.ReadAll(f)
		s, err := ogg.Read(b)
		if err != nil || s.Channels != 1 || s.InputRate != 16000 || !slices.EqualFunc(s.Packets, sent, bytes.Equal) {
			t.Errorf("the uploaded file is not the packets sent: %v", err)
		}
		w.Write([]byte(`{"text":"打开客厅的灯"}`))
	})
	o.Audio = AudioOggOpus
	if !o.TakesOpus() {
		t.Fatal("asr-audio ogg-opus, and the recognizer does not take Opus")
	}
	rec, _ := o.Start(context.Background(), "zh")
	ow, ok := rec.(driver.OpusWriter)
	if !ok {
		t.Fatal("the recognition takes no Opus")
	}
	for _, p := range sent {
		if err := ow.WriteOpus(p); err != nil {
			t.Fatal(err)
		}
	}
	if err := ow.WriteOpus([]byte{1<<3 | 1, 1, 2, 3}); err == nil {
		t.Fatal("an invalid packet was taken")
	}
	if err := rec.Write(make([]int16, 960)); err == nil {
		t.Fatal("PCM was taken into an Ogg upload")
	}
	if text, err := rec.Finish(context.Background()); err != nil || text != "打开客厅的灯" {
		t.Fatalf("Finish = %q %v", text, err)
	}
	if (&OpenAI{}).TakesOpus() {
		t.Fatal("by default (wav) the recognizer takes Opus")
	}
}

// MaxAudio bounds an Ogg upload by the packets' durations.
func TestOggUtteranceIsBounded(t *testing.T) {
	o := &OpenAI{MaxAudio: time.Second, Audio: AudioOggOpus}
	rec, _ := o.Start(context.Background(), "")
	for range 100 {
		_ = rec.(driver.OpusWriter).WriteOpus(packet60(100, 1))
	}
	u := rec.(*upload)
	if n := u.ogg.Packets(); n != 16 {
		t.Fatalf("kept %d packets of 60 ms, want 16 (960 ms)", n)
	}
	if cap(u.buf) > formRoom+usualOpus {
		t.Fatalf("%d bytes for 16 packets", len(u.buf))
	}
}

package main

import (
	"bytes"
	"context"
	"mime/multipart"
	"net/http"
	"testing"

	"github.com/xiaozhi-hub/hub/asr"
	"github.com/xiaozhi-hub/hub/ogg"
	"github.com/xiaozhi-hub/hub/voice/driver"
)

// The stand-in recognizer takes what the hub's recognizer uploads in
// either format, counting the files and the Ogg file's packets, and
// answers 400 to an Ogg file whose checksum is wrong.
func TestStandInChecksUploads(t *testing.T) {
	st, err := startStandIn()
	if err != nil {
		t.Fatal(err)
	}
	defer st.close()
	ctx := context.Background()
	speech, err := spokenTone()
	if err != nil {
		t.Fatal(err)
	}
	for _, audio := range asr.Audios() {
		o := &asr.OpenAI{BaseURL: st.baseURL(), APIKey: standInKey, Audio: audio}
		rec, _ := o.Start(ctx, "zh")
		for _, p := range speech {
			if o.TakesOpus() {
				_ = rec.(driver.OpusWriter).WriteOpus(p)
			} else {
				_ = rec.Write(make([]int16, 960))
			}
		}
		if text, err := rec.Finish(ctx); err != nil || text != standInHeard {
			t.Fatalf("%s: %q %v", audio, text, err)
		}
	}
	if st.wavFiles.Load() != 1 || st.oggFiles.Load() != 1 || st.oggPackets.Load() != int64(len(speech)) {
		t.Fatalf("files: %d wav, %d ogg with %d packets; want 1, 1 with %d", st.wavFiles.Load(), st.oggFiles.Load(), st.oggPackets.Load(), len(speech))
	}

	w := ogg.NewWriter(nil, 1, 16000)
	for _, p := range speech {
		_ = w.WritePacket(p)
	}
	file := w.Close()
	file[len(file)-1] ^= 0xff
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	part, _ := mw.CreateFormFile("file", "audio.ogg")
	part.Write(file)
	mw.Close()
	req, _ := http.NewRequest("POST", st.baseURL()+"/audio/transcriptions", &body)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("Authorization", "Bearer "+standInKey)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 400 || st.err() == nil {
		t.Fatalf("a damaged Ogg file: %d, stand-in error %v", res.StatusCode, st.err())
	}
}

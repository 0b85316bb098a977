package asr

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"strings"
	"time"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/internal/httpx"
	"github.com/xiaozhi-hub/hub/internal/provider"
	"github.com/xiaozhi-hub/hub/ogg"
	"github.com/xiaozhi-hub/hub/voice/driver"
	"github.com/xiaozhi-hub/hub/wav"
)

// OpenAI is an OpenAI-compatible transcription API: POST
// {base}/audio/transcriptions
// (https://platform.openai.com/docs/api-reference/audio/createTranscription),
// which OpenAI, Groq, SiliconFlow and local servers (speaches, LocalAI,
// whisper.cpp's server) all accept. The utterance is uploaded as a file
// once it is complete: a WAV file of its PCM, or, with Audio "ogg-opus",
// an Ogg Opus file of the device's own packets (driver.OpusWriter), which
// spares the hub decoding them and holds a tenth of the bytes or less.
type OpenAI struct {
	BaseURL  string // e.g. https://api.openai.com/v1 (default)
	APIKey   string // sent as a bearer token when set
	Model    string // default whisper-1
	Language string // ISO-639-1 hint ("zh", "en"); "" lets the model decide
	// Audio is the upload's format: AudioWAV ("" too) or AudioOggOpus.
	Audio  string
	Client *http.Client
	// MaxAudio bounds one utterance (default 60 s): audio beyond it is
	// dropped, so a device that never stops costs bounded memory.
	MaxAudio time.Duration
	// Timeout bounds one transcription request (default 30 s).
	Timeout time.Duration
}

const rate = 16000

// Start opens an utterance; language, when set, overrides o.Language.
func (o *OpenAI) Start(_ context.Context, language string) (driver.Recognition, error) {
	if language == "" {
		language = o.Language
	}
	max := o.MaxAudio
	if max <= 0 {
		max = 60 * time.Second
	}
	return &upload{o: o, language: language, max: max}, nil
}

// TakesOpus reports whether the recognitions Start opens take the
// device's Opus packets (driver.OpusRecognizer): with Audio "ogg-opus".
func (o *OpenAI) TakesOpus() bool { return o.Audio == AudioOggOpus }

// upload collects an utterance and transcribes it when it is complete.
// The audio is kept as the uploaded file's content from the start, in the
// buffer the request is sent from: room is left before it for the form's
// headers and the WAV's (formRoom), and the form's last fields are
// appended after it. One buffer per utterance, sized for a short one, and
// no copy of the audio. The first audio written decides the file: PCM
// (Write) makes a WAV file, Opus packets (WriteOpus) an Ogg Opus one.
type upload struct {
	o        *OpenAI
	language string
	max      time.Duration
	buf      []byte      // formRoom bytes, then the 16-bit little-endian samples or the Ogg stream
	ogg      *ogg.Writer // writes the Ogg stream into buf, once a packet was written
}

// usualUtterance is the audio an upload makes room for at first (a
// command said to a speaker is a second or two).
const usualUtterance = 2 * time.Second

// usualOpus is the room made at first for an Ogg upload: its headers and
// pages, and usualUtterance of speech at libopus's automatic bitrate for
// 16 kHz mono in 60 ms frames (17 kbps, about 128 bytes a packet). At 32
// kbps (the bench's devices: 240 bytes) 1.2 s still fits after one growth
// by half; starting larger measured no better (more live memory a turn).
const usualOpus = 4096

// formRoom is the room before the audio: the form's boundary and the
// file's part header (about 150 bytes) and the WAV header.
const formRoom = 512

func (u *upload) samples() []byte { return u.buf[min(len(u.buf), formRoom):] }

// Write adds PCM (16 kHz mono); refused once Opus was written.
func (u *upload) Write(pcm []int16) error {
	if u.ogg != nil {
		return errMixed
	}
	max := 2 * int(u.max.Seconds()*rate)
	if u.buf == nil {
		u.buf = make([]byte, formRoom, formRoom+min(max, int(usualUtterance.Seconds()*rate)*2))
	}
	if room := (max - len(u.samples())) / 2; room > 0 {
		u.buf = wav.AppendSamples(u.buf, pcm[:min(len(pcm), room)])
	}
	return nil
}

// WriteOpus adds one of the device's Opus packets (mono, 16 kHz); its
// duration is read from its TOC. A packet whose framing is invalid is
// refused (ogg.ErrPacket), and packets beyond MaxAudio are dropped.
func (u *upload) WriteOpus(packet []byte) error {
	if u.ogg == nil {
		if u.buf != nil {
			return errMixed
		}
		u.ogg = ogg.NewWriter(make([]byte, formRoom, formRoom+usualOpus), 0, rate)
	}
	n, err := ogg.OpusSamples(packet)
	if err != nil {
		return err
	}
	if u.ogg.Samples()+int64(n) > int64(u.max.Seconds()*48000) {
		return nil
	}
	return u.ogg.WritePacket(packet)
}

// errMixed refuses PCM and Opus in one utterance.
var errMixed = errors.New("asr: an utterance's audio is either PCM or Opus")

// Close releases the audio.
func (u *upload) Close() { u.buf, u.ogg = nil, nil }

// file ends the utterance's audio and returns its file's name and content
// type, and the audio (nil when nothing was said); isWAV when the file's
// header is still to be written before it.
func (u *upload) file() (name, ctype string, audio []byte, isWAV bool) {
	if u.ogg != nil {
		if u.ogg.Packets() == 0 {
			return "", "", nil, false
		}
		u.buf, u.ogg = u.ogg.Close(), nil
		return "audio.ogg", "audio/ogg", u.buf[formRoom:], false
	}
	return "speech.wav", "application/octet-stream", u.samples(), true
}

// Finish uploads the utterance and returns its text.
func (u *upload) Finish(ctx context.Context) (string, error) {
	name, ctype, audio, isWAV := u.file()
	if len(audio) == 0 {
		return "", nil
	}
	o := u.o
	// The form is written around the audio: the file's part header and
	// the file's own header into the room before it, the other fields
	// after it.
	form := &appender{}
	mw := multipart.NewWriter(form)
	_, _ = mw.CreatePart(textproto.MIMEHeader{
		"Content-Disposition": {`form-data; name="file"; filename="` + name + `"`},
		"Content-Type":        {ctype},
	})
	head := form.b
	if isWAV {
		head = wav.AppendHeader(head, len(audio)/2, rate)
	}
	if len(head) > formRoom {
		return "", hub.Errorf(hub.EINTERNAL, "speech recognition: a form header of %d bytes", len(head))
	}
	start := formRoom - len(head)
	copy(u.buf[start:], head)
	form.b = u.buf // the fields follow the audio
	model := o.Model
	if model == "" {
		model = OpenAIModel
	}
	_ = mw.WriteField("model", model)
	_ = mw.WriteField("response_format", "json")
	if u.language != "" {
		_ = mw.WriteField("language", strings.SplitN(u.language, "-", 2)[0])
	}
	_ = mw.Close()
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	endpoint := strings.TrimSuffix(baseURL(o.BaseURL), "/") + "/audio/transcriptions"
	req, err := http.NewRequestWithContext(ctx, "POST", endpoint, bytes.NewReader(form.b[start:]))
	if err != nil {
		return "", hub.Errorf(hub.EINVALID, "asr-base-url %q: %v", o.BaseURL, err)
	}
	req.Header.Set("Content-Type", mw.FormDataContentType())
	if o.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+o.APIKey)
	}
	res, err := client(o.Client).Do(req)
	if err != nil {
		return "", hub.Errorf(hub.EUNAVAILABLE, "speech recognition at %s: %v", provider.Host(endpoint), err)
	}
	defer res.Body.Close()
	data, err := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	if err != nil {
		return "", hub.Errorf(hub.EUNAVAILABLE, "speech recognition at %s: %v", provider.Host(endpoint), err)
	}
	if res.StatusCode/100 != 2 {
		return "", hub.Errorf(hub.EUNAVAILABLE, "speech recognition at %s answered %d: %s", provider.Host(endpoint), res.StatusCode, provider.Message(data))
	}
	var out struct {
		Text *string `json:"text"`
	}
	if err := json.Unmarshal(data, &out); err != nil || out.Text == nil {
		return "", hub.Errorf(hub.EUNAVAILABLE, "speech recognition at %s answered something that is not a transcription: %s", provider.Host(endpoint), hub.Truncate(data, 120))
	}
	return strings.TrimSpace(*out.Text), nil
}

// appender appends what is written to b.
type appender struct{ b []byte }

func (w *appender) Write(p []byte) (int, error) { w.b = append(w.b, p...); return len(p), nil }

func baseURL(s string) string {
	if s == "" {
		return OpenAIBaseURL
	}
	return s
}

func client(c *http.Client) *http.Client {
	if c == nil {
		return httpx.Providers
	}
	return c
}

package asr

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"strings"
	"time"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/internal/httpx"
	"github.com/xiaozhi-hub/hub/internal/provider"
	"github.com/xiaozhi-hub/hub/voice/driver"
	"github.com/xiaozhi-hub/hub/wav"
)

// OpenAI is an OpenAI-compatible transcription API: POST
// {base}/audio/transcriptions
// (https://platform.openai.com/docs/api-reference/audio/createTranscription),
// which OpenAI, Groq, SiliconFlow and local servers (speaches, LocalAI,
// whisper.cpp's server) all accept. The utterance is uploaded as a WAV
// file once it is complete.
type OpenAI struct {
	BaseURL  string // e.g. https://api.openai.com/v1 (default)
	APIKey   string // sent as a bearer token when set
	Model    string // default whisper-1
	Language string // ISO-639-1 hint ("zh", "en"); "" lets the model decide
	Client   *http.Client
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
	return &upload{o: o, language: language, max: 2 * int(max.Seconds()*rate)}, nil
}

// upload collects an utterance and transcribes it when it is complete.
// The audio is kept as the WAV file's samples from the start, and sent
// from there: one buffer per utterance, sized for a short one.
type upload struct {
	o        *OpenAI
	language string
	data     []byte // 16-bit little-endian samples
	max      int    // bytes
}

// usualUtterance is the audio an upload makes room for at first (a
// command said to a speaker is a second or two).
const usualUtterance = 2 * time.Second

// Write adds PCM (16 kHz mono).
func (u *upload) Write(pcm []int16) error {
	if u.data == nil {
		u.data = make([]byte, 0, min(u.max, int(usualUtterance.Seconds()*rate)*2))
	}
	if room := (u.max - len(u.data)) / 2; room > 0 {
		u.data = wav.AppendSamples(u.data, pcm[:min(len(pcm), room)])
	}
	return nil
}

// Close releases the audio.
func (u *upload) Close() { u.data = nil }

// Finish uploads the utterance and returns its text.
func (u *upload) Finish(ctx context.Context) (string, error) {
	if len(u.data) == 0 {
		return "", nil
	}
	o := u.o
	// The form is written around the audio, which is sent as it is: the
	// file's part header and the WAV header before it, the other fields
	// after it.
	var head, tail bytes.Buffer
	form := &switchWriter{&head}
	mw := multipart.NewWriter(form)
	_, _ = mw.CreateFormFile("file", "speech.wav")
	head.Write(wav.Header(len(u.data)/2, rate))
	form.to = &tail
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
	parts := [][]byte{head.Bytes(), u.data, tail.Bytes()}
	body := func() io.Reader {
		r := make([]io.Reader, len(parts))
		for i, p := range parts {
			r[i] = bytes.NewReader(p)
		}
		return io.MultiReader(r...)
	}
	req, err := http.NewRequestWithContext(ctx, "POST", endpoint, body())
	if err != nil {
		return "", hub.Errorf(hub.EINVALID, "asr-base-url %q: %v", o.BaseURL, err)
	}
	req.ContentLength = int64(head.Len() + len(u.data) + tail.Len())
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(body()), nil }
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

// switchWriter writes to one writer, then another.
type switchWriter struct{ to io.Writer }

func (w *switchWriter) Write(p []byte) (int, error) { return w.to.Write(p) }

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

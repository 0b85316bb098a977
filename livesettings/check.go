package livesettings

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/agent"
	"github.com/xiaozhi-hub/hub/asr"
	"github.com/xiaozhi-hub/hub/config"
	"github.com/xiaozhi-hub/hub/tts"
	"github.com/xiaozhi-hub/hub/voice/driver"
)

// What a test checks.
const (
	TestAgent = "agent"
	TestASR   = "asr"
	TestTTS   = "tts"
)

// Problems a test reports, in words.
const (
	ProblemWrongKey      = "wrong key"
	ProblemUnreachable   = "unreachable"
	ProblemUnknownModel  = "unknown model"
	ProblemWrongAddress  = "wrong address"
	ProblemNotConfigured = "not configured"
	ProblemInvalid       = "invalid settings"
	ProblemFailed        = "failed"
)

// testTimeout bounds one test's request.
const testTimeout = 20 * time.Second

// Test makes the smallest real request to what ("agent", "asr" or "tts")
// with the current settings, or with given applied over them (to try a
// key before saving it), and says in words what failed. An unknown what
// or setting name is an EINVALID error; everything else is an answer.
func (s *Service) Test(ctx context.Context, what string, given map[string]string) (hub.SettingsTest, error) {
	r := hub.SettingsTest{What: what}
	if err := checkWhat(what); err != nil {
		return r, err
	}
	for name := range given {
		if _, err := lookup(name); err != nil {
			return r, err
		}
	}
	cfg, err := s.with(given)
	if err != nil {
		return problem(r, ProblemInvalid, err), nil
	}
	return s.run(ctx, r, cfg, nil), nil
}

// checkWhat refuses a test of something but the agent, asr or tts.
func checkWhat(what string) error {
	switch what {
	case TestAgent, TestASR, TestTTS:
		return nil
	}
	return hub.Errorf(hub.EINVALID, "what: %q is not agent, asr or tts", hub.Truncate([]byte(what), 32))
}

// run makes r.What's smallest request with the providers cfg makes (own:
// build's) and fills in what failed.
func (s *Service) run(ctx context.Context, r hub.SettingsTest, cfg config.Config, own map[string]bool) hub.SettingsTest {
	c, err := s.build(cfg, own)
	if err != nil {
		return problem(r, ProblemInvalid, err)
	}
	ctx, cancel := context.WithTimeout(ctx, testTimeout)
	defer cancel()
	switch r.What {
	case TestAgent:
		err = testAgent(ctx, c)
	case TestASR:
		err = testASR(ctx, c)
	default:
		err = testTTS(ctx, c)
	}
	if err != nil {
		return problem(r, classify(err), err)
	}
	r.OK = true
	return r
}

// errNotConfigured marks a provider the settings do not name.
var errNotConfigured = errors.New("not configured")

func testAgent(ctx context.Context, c *Current) error {
	if c.LLM == nil {
		return notConfigured(c.LLMErr)
	}
	_, err := c.LLM.Chat(ctx, agent.Request{Model: c.Agent.Model, MaxTokens: 16,
		Messages: []agent.Message{{Role: agent.RoleUser, Text: "Say OK."}}}, nil)
	return err
}

func testASR(ctx context.Context, c *Current) error {
	rec := c.Recognizer
	if rec == nil {
		return notConfigured(errors.New("asr-provider is empty: set it to " + strings.Join(asr.Providers(), ", ")))
	}
	r, err := rec.Start(ctx, c.Config.ASRLanguage)
	if err != nil {
		return err
	}
	defer r.Close()
	// Half a second of silence, as turns send it: the device's Opus when
	// the recognizer takes it (asr-audio ogg-opus: a server that does not
	// take Ogg fails here, not at the first turn), else PCM.
	if driver.TakesOpus(rec) {
		if w, ok := r.(driver.OpusWriter); ok {
			for range 9 {
				if err := w.WriteOpus(silence60); err != nil {
					return err
				}
			}
		}
	} else if err := r.Write(make([]int16, 8000)); err != nil {
		return err
	}
	_, err = r.Finish(ctx)
	return err
}

// silence60 is 60 ms of silence as one Opus packet, as libopus and gopus
// encode it at 16 kHz: three 20 ms CELT frames (TOC 0xbb, code 3).
var silence60 = []byte{0xbb, 0x03, 0xff, 0xfe, 0xff, 0xfe, 0xff, 0xfe}

func testTTS(ctx context.Context, c *Current) error {
	syn := c.Synthesizer
	if syn == nil {
		return notConfigured(errors.New("tts-provider is empty: set it to " + strings.Join(tts.Providers(), ", ")))
	}
	sp, err := syn.Synthesize(ctx, "OK", c.Config.TTSVoice)
	if err != nil {
		return err
	}
	defer sp.Close()
	for {
		pcm, err := sp.Read(ctx)
		if err == io.EOF {
			return nil // an answer with no audio still proves key, address and voice
		}
		if err != nil || len(pcm) > 0 {
			return err
		}
	}
}

func notConfigured(err error) error { return errors.Join(errNotConfigured, err) }

func problem(r hub.SettingsTest, p string, err error) hub.SettingsTest {
	r.Problem = p
	msg := hub.ErrorMessage(err)
	if hub.ErrorCode(err) == hub.EINTERNAL { // the provider's or the connection's own words, which say where it failed and why
		if pe, ok := errors.AsType[*agent.ProviderError](err); ok {
			msg = pe.Error()
		} else if op, ok := errors.AsType[*net.OpError](err); ok {
			msg = op.Error()
		}
	}
	if errors.Is(err, errNotConfigured) {
		msg = strings.TrimPrefix(msg, errNotConfigured.Error()+"\n")
	}
	r.Detail = hub.Truncate([]byte(msg), 500)
	return r
}

// answered finds the HTTP status in the speech providers' errors
// ("speech synthesis at host answered 401: …").
var answered = regexp.MustCompile(`answered (\d{3})`)

// classify names what failed: the HTTP status when there is one, else the
// words of the transport's error.
func classify(err error) string {
	if errors.Is(err, errNotConfigured) {
		return ProblemNotConfigured
	}
	msg := strings.ToLower(err.Error())
	status := 0
	if pe, ok := errors.AsType[*agent.ProviderError](err); ok {
		status = pe.Status
		msg = strings.ToLower(pe.Type + " " + pe.Message)
	} else if m := answered.FindStringSubmatch(msg); m != nil {
		status, _ = strconv.Atoi(m[1])
	}
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden,
		strings.Contains(msg, "invalidapikey"), strings.Contains(msg, "api key"), strings.Contains(msg, "api_key"):
		return ProblemWrongKey
	case strings.Contains(msg, "model") && (status == http.StatusNotFound || status == http.StatusBadRequest || status == 0):
		return ProblemUnknownModel
	case status == http.StatusNotFound:
		return ProblemWrongAddress
	case errors.Is(err, context.DeadlineExceeded), strings.Contains(msg, "connection refused"),
		strings.Contains(msg, "no such host"), strings.Contains(msg, "dial "), strings.Contains(msg, "timeout"),
		strings.Contains(msg, "unreachable"), strings.Contains(msg, "eof"):
		return ProblemUnreachable
	}
	return ProblemFailed
}

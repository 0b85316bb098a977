package agent

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/xiaozhi-hub/hub"
)

// ProviderError is a failure reported by the LLM API.
type ProviderError struct {
	Provider string
	Status   int    // HTTP status, 0 for an error event inside a stream
	Type     string // the provider's error type, when it gave one
	Message  string
}

func (e *ProviderError) Error() string {
	s := e.Provider + " API"
	if e.Status != 0 {
		s += " returned HTTP " + strconv.Itoa(e.Status)
	} else {
		s += " reported an error"
	}
	if e.Type != "" {
		s += " (" + e.Type + ")"
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	if e.Status == http.StatusUnauthorized || e.Status == http.StatusForbidden {
		s += "; check the API key (" + keyVar(e.Provider) + ")"
	}
	return s
}

func keyVar(provider string) string {
	if provider == ProviderAnthropic {
		return "ANTHROPIC_API_KEY"
	}
	return "OPENAI_API_KEY"
}

// retryable reports whether a status is worth a second try: rate limits,
// overload (Anthropic's 529) and server errors.
func retryable(status int) bool {
	return status == http.StatusTooManyRequests || status >= 500
}

// post sends a JSON request and returns the response of the first attempt
// that is not a retryable failure; the caller closes its body. Failures are
// *ProviderError values; decodeError reads the provider's error body.
func post(ctx context.Context, client *http.Client, provider, url string, header http.Header, body any,
	decodeError func([]byte) (typ, msg string)) (*http.Response, error) {
	payload, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("encode %s request: %w", provider, err)
	}
	const attempts = 3
	for attempt := 1; ; attempt++ {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(payload))
		if err != nil {
			return nil, hub.Errorf(hub.EINVALID, "%s base URL: %v", provider, err)
		}
		req.Header = header.Clone()
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if attempt < attempts {
				if werr := sleep(ctx, backoff(attempt, "")); werr != nil {
					return nil, werr
				}
				continue
			}
			return nil, &ProviderError{Provider: provider, Message: err.Error()}
		}
		if resp.StatusCode < 300 {
			return resp, nil
		}
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		if retryable(resp.StatusCode) && attempt < attempts {
			if werr := sleep(ctx, backoff(attempt, resp.Header.Get("Retry-After"))); werr != nil {
				return nil, werr
			}
			continue
		}
		typ, msg := decodeError(data)
		if msg == "" {
			msg = strings.TrimSpace(string(data))
			if len(msg) > 300 {
				msg = msg[:300] + "…"
			}
		}
		return nil, &ProviderError{Provider: provider, Status: resp.StatusCode, Type: typ, Message: msg}
	}
}

func backoff(attempt int, retryAfter string) time.Duration {
	if s, err := strconv.Atoi(retryAfter); err == nil && s >= 0 {
		return min(time.Duration(s)*time.Second, 10*time.Second)
	}
	return time.Duration(attempt) * 250 * time.Millisecond
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// readSSE calls fn for each Server-Sent Event in r (event name, data with
// multiple data lines joined by "\n"). It stops at the end of r, when fn
// returns an error, or when fn returns errStop.
func readSSE(r io.Reader, fn func(event, data string) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 4<<10), 8<<20) // grows for a long line; most are short
	var event string
	var data []string
	dispatch := func() error {
		if len(data) == 0 {
			event = ""
			return nil
		}
		err := fn(event, strings.Join(data, "\n"))
		event, data = "", nil
		return err
	}
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if err := dispatch(); err != nil {
				return stopOK(err)
			}
		case strings.HasPrefix(line, ":"):
		case strings.HasPrefix(line, "event:"):
			event = strings.TrimSpace(line[len("event:"):])
		case strings.HasPrefix(line, "data:"):
			data = append(data, strings.TrimPrefix(line[len("data:"):], " "))
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	return stopOK(dispatch())
}

var errStop = errors.New("stop reading events")

func stopOK(err error) error {
	if errors.Is(err, errStop) {
		return nil
	}
	return err
}

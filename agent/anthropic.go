package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// Anthropic speaks the Messages API (POST {base}/v1/messages) with tool
// use, streamed or not. It is written over net/http rather than the SDK to
// keep the hub's build small; the wire format follows Anthropic's API
// reference (tool_use / tool_result content blocks; message_start,
// content_block_start/delta/stop, message_delta, message_stop events).
type Anthropic struct {
	BaseURL   string // default https://api.anthropic.com
	APIKey    string // sent as x-api-key
	AuthToken string // sent as Authorization: Bearer, when there is no APIKey
	Version   string // anthropic-version header, default 2023-06-01
	Client    *http.Client
}

// Name implements Provider.
func (p *Anthropic) Name() string { return ProviderAnthropic }

type antBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Content   string          `json:"content,omitempty"`
	IsError   bool            `json:"is_error,omitempty"`
}

type antMessage struct {
	Role    string     `json:"role"`
	Content []antBlock `json:"content"`
}

type antTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema"`
}

type antRequest struct {
	Model     string       `json:"model"`
	MaxTokens int          `json:"max_tokens"`
	System    string       `json:"system,omitempty"`
	Messages  []antMessage `json:"messages"`
	Tools     []antTool    `json:"tools,omitempty"`
	Stream    bool         `json:"stream,omitempty"`
}

type antUsage struct {
	InputTokens  int `json:"input_tokens"`
	OutputTokens int `json:"output_tokens"`
}

type antResponse struct {
	Content    []antBlock `json:"content"`
	StopReason string     `json:"stop_reason"`
	Usage      antUsage   `json:"usage"`
}

// antMessages converts the conversation. Consecutive turns of one role are
// merged (tool results followed by the user's next message form one user
// turn, as the API expects).
func antMessages(msgs []Message) []antMessage {
	var out []antMessage
	for _, m := range msgs {
		var blocks []antBlock
		for _, r := range m.Results {
			content := r.Content
			if content == "" {
				content = "(empty)"
			}
			blocks = append(blocks, antBlock{Type: "tool_result", ToolUseID: r.CallID, Content: content, IsError: r.IsError})
		}
		if m.Text != "" {
			blocks = append(blocks, antBlock{Type: "text", Text: m.Text})
		}
		for _, c := range m.ToolCalls {
			blocks = append(blocks, antBlock{Type: "tool_use", ID: c.ID, Name: c.Name, Input: objectOrEmpty(c.Input)})
		}
		if len(blocks) == 0 {
			continue
		}
		if n := len(out); n > 0 && out[n-1].Role == m.Role {
			out[n-1].Content = append(out[n-1].Content, blocks...)
			continue
		}
		out = append(out, antMessage{Role: m.Role, Content: blocks})
	}
	return out
}

// Chat implements Provider.
func (p *Anthropic) Chat(ctx context.Context, req Request, onText func(string)) (Response, error) {
	body := antRequest{Model: req.Model, MaxTokens: req.MaxTokens, System: req.System, Messages: antMessages(req.Messages), Stream: onText != nil}
	for _, t := range req.Tools {
		body.Tools = append(body.Tools, antTool{Name: t.Name, Description: t.Description, InputSchema: t.Schema})
	}
	h := http.Header{}
	h.Set("anthropic-version", p.Version)
	if p.APIKey != "" {
		h.Set("x-api-key", p.APIKey)
	} else if p.AuthToken != "" {
		h.Set("Authorization", "Bearer "+p.AuthToken)
	}
	if onText != nil {
		h.Set("Accept", "text/event-stream")
	}
	resp, err := post(ctx, p.Client, ProviderAnthropic, strings.TrimRight(p.BaseURL, "/")+"/v1/messages", h, body, antError)
	if err != nil {
		return Response{}, err
	}
	defer resp.Body.Close()
	if onText == nil {
		var r antResponse
		if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
			return Response{}, fmt.Errorf("anthropic: decode response: %w", err)
		}
		out := Response{StopReason: r.StopReason, Usage: Usage{InputTokens: r.Usage.InputTokens, OutputTokens: r.Usage.OutputTokens}}
		for _, b := range r.Content {
			switch b.Type {
			case "text":
				out.Text += b.Text
			case "tool_use":
				out.ToolCalls = append(out.ToolCalls, ToolCall{ID: b.ID, Name: b.Name, Input: b.Input})
			}
		}
		return out, nil
	}
	return p.readStream(resp, onText)
}

func antError(data []byte) (string, string) {
	var e struct {
		Error struct{ Type, Message string } `json:"error"`
	}
	_ = json.Unmarshal(data, &e)
	return e.Error.Type, e.Error.Message
}

// readStream assembles a streamed message: text deltas go to onText as they
// come; tool inputs arrive as partial JSON and are joined per block.
func (p *Anthropic) readStream(resp *http.Response, onText func(string)) (Response, error) {
	var out Response
	type block struct {
		call  *ToolCall
		input strings.Builder
	}
	blocks := map[int]*block{}
	var order []int
	var text strings.Builder
	done := false
	err := readSSE(resp.Body, func(_, data string) error {
		var ev struct {
			Type         string          `json:"type"`
			Index        int             `json:"index"`
			Message      antResponse     `json:"message"`
			ContentBlock antBlock        `json:"content_block"`
			Delta        json.RawMessage `json:"delta"`
			Usage        antUsage        `json:"usage"`
			Error        struct{ Type, Message string }
		}
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			return fmt.Errorf("anthropic: bad stream event %q: %w", data, err)
		}
		switch ev.Type {
		case "message_start":
			out.Usage.InputTokens = ev.Message.Usage.InputTokens
		case "content_block_start":
			if ev.ContentBlock.Type == "tool_use" {
				blocks[ev.Index] = &block{call: &ToolCall{ID: ev.ContentBlock.ID, Name: ev.ContentBlock.Name}}
				order = append(order, ev.Index)
			}
		case "content_block_delta":
			var d struct {
				Type        string `json:"type"`
				Text        string `json:"text"`
				PartialJSON string `json:"partial_json"`
			}
			_ = json.Unmarshal(ev.Delta, &d)
			switch d.Type {
			case "text_delta":
				text.WriteString(d.Text)
				onText(d.Text)
			case "input_json_delta":
				if b := blocks[ev.Index]; b != nil {
					b.input.WriteString(d.PartialJSON)
				}
			}
		case "message_delta":
			var d struct {
				StopReason string `json:"stop_reason"`
			}
			_ = json.Unmarshal(ev.Delta, &d)
			out.StopReason = d.StopReason
			out.Usage.OutputTokens = ev.Usage.OutputTokens
		case "message_stop":
			done = true
			return errStop
		case "error":
			return &ProviderError{Provider: ProviderAnthropic, Type: ev.Error.Type, Message: ev.Error.Message}
		}
		return nil
	})
	if err != nil {
		return Response{}, err
	}
	if !done {
		return Response{}, &ProviderError{Provider: ProviderAnthropic, Message: "the stream ended before message_stop"}
	}
	out.Text = text.String()
	for _, i := range order {
		b := blocks[i]
		b.call.Input = json.RawMessage(b.input.String())
		if b.input.Len() == 0 {
			b.call.Input = json.RawMessage("{}")
		}
		out.ToolCalls = append(out.ToolCalls, *b.call)
	}
	return out, nil
}

package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// OpenAI speaks OpenAI-compatible chat completions (POST
// {base}/chat/completions) with function tools, streamed or not. The base
// URL selects the service: https://api.openai.com/v1 (default),
// https://api.deepseek.com/v1, https://dashscope.aliyuncs.com/compatible-mode/v1
// (Qwen), http://localhost:11434/v1 (Ollama), …
type OpenAI struct {
	BaseURL string
	APIKey  string // sent as Authorization: Bearer; Ollama needs none
	Client  *http.Client
}

// Name implements Provider.
func (p *OpenAI) Name() string { return ProviderOpenAI }

type oaiFunction struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

type oaiToolCall struct {
	Index    *int        `json:"index,omitempty"`
	ID       string      `json:"id,omitempty"`
	Type     string      `json:"type,omitempty"`
	Function oaiFunction `json:"function"`
}

type oaiMessage struct {
	Role       string        `json:"role"`
	Content    *string       `json:"content"`
	ToolCalls  []oaiToolCall `json:"tool_calls,omitempty"`
	ToolCallID string        `json:"tool_call_id,omitempty"`
}

type oaiTool struct {
	Type     string `json:"type"`
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		Parameters  json.RawMessage `json:"parameters"`
	} `json:"function"`
}

type oaiRequest struct {
	Model    string       `json:"model"`
	Messages []oaiMessage `json:"messages"`
	Tools    []oaiTool    `json:"tools,omitempty"`
	Stream   bool         `json:"stream,omitempty"`
}

type oaiUsage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
}

func str(s string) *string { return &s }

func oaiMessages(system string, msgs []Message) []oaiMessage {
	out := []oaiMessage{}
	if system != "" {
		out = append(out, oaiMessage{Role: "system", Content: str(system)})
	}
	for _, m := range msgs {
		for _, r := range m.Results {
			content := r.Content
			if r.IsError {
				content = "Error: " + content // the API has no error flag on tool messages
			}
			out = append(out, oaiMessage{Role: "tool", ToolCallID: r.CallID, Content: str(content)})
		}
		if m.Role == RoleUser && m.Text != "" {
			out = append(out, oaiMessage{Role: "user", Content: str(m.Text)})
		}
		if m.Role == RoleAssistant {
			am := oaiMessage{Role: "assistant"}
			if m.Text != "" {
				am.Content = str(m.Text)
			}
			for _, c := range m.ToolCalls {
				am.ToolCalls = append(am.ToolCalls, oaiToolCall{ID: c.ID, Type: "function",
					Function: oaiFunction{Name: c.Name, Arguments: string(c.Input)}})
			}
			if am.Content == nil && len(am.ToolCalls) == 0 {
				continue // an empty answer: nothing to send back
			}
			out = append(out, am)
		}
	}
	return out
}

// Chat implements Provider.
func (p *OpenAI) Chat(ctx context.Context, req Request, onText func(string)) (Response, error) {
	body := oaiRequest{Model: req.Model, Messages: oaiMessages(req.System, req.Messages), Stream: onText != nil}
	for _, t := range req.Tools {
		var ot oaiTool
		ot.Type = "function"
		ot.Function.Name, ot.Function.Description, ot.Function.Parameters = t.Name, t.Description, t.Schema
		body.Tools = append(body.Tools, ot)
	}
	h := http.Header{}
	if p.APIKey != "" {
		h.Set("Authorization", "Bearer "+p.APIKey)
	}
	resp, err := post(ctx, p.Client, ProviderOpenAI, strings.TrimRight(p.BaseURL, "/")+"/chat/completions", h, body, oaiError)
	if err != nil {
		return Response{}, err
	}
	defer resp.Body.Close()
	if onText == nil {
		var r struct {
			Choices []struct {
				Message      oaiMessage `json:"message"`
				FinishReason string     `json:"finish_reason"`
			} `json:"choices"`
			Usage oaiUsage `json:"usage"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
			return Response{}, fmt.Errorf("openai: decode response: %w", err)
		}
		if len(r.Choices) == 0 {
			return Response{}, &ProviderError{Provider: ProviderOpenAI, Message: "the response has no choices"}
		}
		c := r.Choices[0]
		out := Response{StopReason: c.FinishReason, Usage: Usage{InputTokens: r.Usage.PromptTokens, OutputTokens: r.Usage.CompletionTokens}}
		if c.Message.Content != nil {
			out.Text = *c.Message.Content
		}
		for _, tc := range c.Message.ToolCalls {
			out.ToolCalls = append(out.ToolCalls, ToolCall{ID: tc.ID, Name: tc.Function.Name, Input: json.RawMessage(tc.Function.Arguments)})
		}
		return out, nil
	}
	return readOAIStream(resp, onText)
}

func oaiError(data []byte) (string, string) {
	var e struct {
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	_ = json.Unmarshal(data, &e)
	return e.Error.Type, e.Error.Message
}

// readOAIStream joins streamed chunks. Tool calls arrive in pieces keyed by
// index: the first carries id and name, later ones fragments of arguments.
// Servers that omit the index start a new call with each new id.
func readOAIStream(resp *http.Response, onText func(string)) (Response, error) {
	var out Response
	var text strings.Builder
	type call struct {
		id, name string
		args     strings.Builder
	}
	var calls []*call
	byIndex := map[int]*call{}
	sawDone := false
	err := readSSE(resp.Body, func(_, data string) error {
		if strings.TrimSpace(data) == "[DONE]" {
			sawDone = true
			return errStop
		}
		var chunk struct {
			Choices []struct {
				Delta struct {
					Content   *string       `json:"content"`
					ToolCalls []oaiToolCall `json:"tool_calls"`
				} `json:"delta"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
			Usage *oaiUsage `json:"usage"`
			Error *struct {
				Type    string `json:"type"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal([]byte(data), &chunk); err != nil {
			return fmt.Errorf("openai: bad stream chunk %q: %w", data, err)
		}
		if chunk.Error != nil {
			return &ProviderError{Provider: ProviderOpenAI, Type: chunk.Error.Type, Message: chunk.Error.Message}
		}
		if chunk.Usage != nil {
			out.Usage = Usage{InputTokens: chunk.Usage.PromptTokens, OutputTokens: chunk.Usage.CompletionTokens}
		}
		for _, ch := range chunk.Choices {
			if ch.Delta.Content != nil && *ch.Delta.Content != "" {
				text.WriteString(*ch.Delta.Content)
				onText(*ch.Delta.Content)
			}
			for _, tc := range ch.Delta.ToolCalls {
				var c *call
				switch {
				case tc.Index != nil && byIndex[*tc.Index] != nil:
					c = byIndex[*tc.Index]
				case tc.Index == nil && len(calls) > 0 && (tc.ID == "" || tc.ID == calls[len(calls)-1].id):
					c = calls[len(calls)-1]
				default:
					c = &call{}
					calls = append(calls, c)
					if tc.Index != nil {
						byIndex[*tc.Index] = c
					}
				}
				if tc.ID != "" {
					c.id = tc.ID
				}
				if tc.Function.Name != "" {
					c.name = tc.Function.Name
				}
				c.args.WriteString(tc.Function.Arguments)
			}
			if ch.FinishReason != nil && *ch.FinishReason != "" {
				out.StopReason = *ch.FinishReason
			}
		}
		return nil
	})
	if err != nil {
		return Response{}, err
	}
	if !sawDone && out.StopReason == "" {
		return Response{}, &ProviderError{Provider: ProviderOpenAI, Message: "the stream ended before a finish_reason"}
	}
	out.Text = text.String()
	for i, c := range calls {
		id := c.id
		if id == "" {
			id = fmt.Sprintf("call_%d", i) // some compatible servers send no id
		}
		args := c.args.String()
		if strings.TrimSpace(args) == "" {
			args = "{}"
		}
		out.ToolCalls = append(out.ToolCalls, ToolCall{ID: id, Name: c.name, Input: json.RawMessage(args)})
	}
	return out, nil
}

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
)

// The OpenAI-compatible wire of the model: what a chat completion call sends and gets back.

type toolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type chatMessage struct {
	Role       string     `json:"role"`
	Content    *string    `json:"content"`
	ToolCalls  []toolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
}

type completion struct {
	Choices []struct {
		Message struct {
			Content          *string    `json:"content"`
			ReasoningContent string     `json:"reasoning_content"`
			ToolCalls        []toolCall `json:"tool_calls"`
		} `json:"message"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     int64 `json:"prompt_tokens"`
		CompletionTokens int64 `json:"completion_tokens"`
	} `json:"usage"`
}

// providerError is a model call that failed: the turn fails with provider_error.
type providerError struct{ message string }

func (e *providerError) Error() string { return e.message }

// toolSpec is one of the reference tools, as the model is offered it (docs/certify-contract.md).
type toolSpec struct {
	Name        string         `json:"name"`
	Description string         `json:"description"`
	Parameters  map[string]any `json:"parameters"`
}

func stringParams(names ...string) map[string]any {
	properties := map[string]any{}
	for _, n := range names {
		properties[n] = map[string]any{"type": "string"}
	}
	return map[string]any{"type": "object", "properties": properties, "required": names}
}

var tools = []toolSpec{
	{Name: "shell", Description: "Runs a shell command in the thread's folder.", Parameters: stringParams("command")},
	{Name: "write_file", Description: "Writes a file in the thread's folder.", Parameters: stringParams("path", "content")},
	{Name: "read_file", Description: "Reads a file in the thread's folder.", Parameters: stringParams("path")},
}

// callModel makes one model call, not streamed.
func (g *gateway) callModel(t *turnState, model string, messages []chatMessage, withTools bool) (*completion, error) {
	body := map[string]any{"model": model, "messages": messages}
	if withTools {
		offered := make([]map[string]any, len(tools))
		for i, tool := range tools {
			offered[i] = map[string]any{"type": "function", "function": tool}
		}
		body["tools"] = offered
	}
	data, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	request, err := http.NewRequestWithContext(t.ctx, http.MethodPost, g.providerURL+"/chat/completions", bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	request.Header.Set("content-type", "application/json")
	response, err := g.http.Do(request)
	if err != nil {
		return nil, &providerError{fmt.Sprintf("the model could not be reached: %v", err)}
	}
	defer response.Body.Close()
	text, err := io.ReadAll(response.Body)
	if err != nil {
		return nil, &providerError{fmt.Sprintf("the model's answer could not be read: %v", err)}
	}
	if response.StatusCode/100 != 2 {
		return nil, &providerError{fmt.Sprintf("the model answered HTTP %d: %s", response.StatusCode, text)}
	}
	var c completion
	if err := json.Unmarshal(text, &c); err != nil {
		return nil, &providerError{fmt.Sprintf("the model's answer is not a chat completion: %v", err)}
	}
	return &c, nil
}

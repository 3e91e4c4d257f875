// Command mcp-everything drives an MCP server nobody here wrote, the reference
// @modelcontextprotocol/server-everything, with the Go client generated from
// test/fixtures/mcp/schemas: it initializes, lists and calls tools (one of which makes the
// server ask the client to sample its model, another to list its roots), lists resources and
// pings, answering the server's requests with typed handlers. It prints what it saw as one JSON
// object for test/languages/go-mcp.test.ts to judge.
//
//	go run ./test/languages/go/mcp-everything node node_modules/@modelcontextprotocol/server-everything/dist/index.js stdio
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"turnspec.dev/examples/mcp"
	"turnspec.dev/examples/mcp/jsonrpc"
)

// handlers answer the requests the server sends its client.
type handlers struct {
	mu      sync.Mutex
	sampled []mcp.CreateMessageRequestParams
	roots   int
}

func (h *handlers) SamplingCreateMessage(_ context.Context, params mcp.CreateMessageRequestParams) (mcp.CreateMessageResult, error) {
	h.mu.Lock()
	h.sampled = append(h.sampled, params)
	h.mu.Unlock()
	stop := "endTurn"
	return mcp.CreateMessageResult{Role: mcp.RoleAssistant, Content: mcp.TextContent{Text: "A sampled answer."}, Model: "test-model", StopReason: &stop}, nil
}

func (h *handlers) RootsList(context.Context, mcp.ListRootsRequestParams) (mcp.ListRootsResult, error) {
	h.mu.Lock()
	h.roots++
	h.mu.Unlock()
	name := "project"
	return mcp.ListRootsResult{Roots: []mcp.Root{{URI: "file:///work/project", Name: &name}}}, nil
}

// report is what the run saw, for the test to judge.
type report struct {
	ProtocolVersion string   `json:"protocolVersion"`
	ServerName      string   `json:"serverName"`
	Tools           []string `json:"tools"`
	Echo            string   `json:"echo"`
	Sum             string   `json:"sum"`
	Sampled         int      `json:"sampled"`
	SampledAnswer   string   `json:"sampledAnswer"`
	RootsAsked      int      `json:"rootsAsked"`
	RootsSeen       string   `json:"rootsSeen"`
	Resources       int      `json:"resources"`
	Pinged          bool     `json:"pinged"`
	UnknownIsError  bool     `json:"unknownToolIsError"`
	Refused         string   `json:"refusedLocally"`
	Notifications   []string `json:"notifications"`
	Dropped         []string `json:"dropped"`
	Internal        []string `json:"internalErrors"`
}

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "mcp-everything:", err)
		os.Exit(1)
	}
}

func text(blocks []mcp.ContentBlock) string {
	var parts []string
	for _, block := range blocks {
		if t, ok := block.(mcp.TextContent); ok {
			parts = append(parts, t.Text)
		}
	}
	return strings.Join(parts, "\n")
}

func run(command []string) error {
	if len(command) == 0 {
		return errors.New("usage: mcp-everything SERVER-COMMAND...")
	}
	transport, err := jsonrpc.Spawn(exec.Command(command[0], command[1:]...))
	if err != nil {
		return err
	}
	var r report
	var mu sync.Mutex
	h := &handlers{}
	client := mcp.NewClient(transport, h, mcp.ClientOptions{
		Incoming:       jsonrpc.ValidateTolerant,
		RequestTimeout: 20 * time.Second,
		OnProtocolError: func(err *jsonrpc.LocalError, frame []byte) {
			mu.Lock()
			r.Dropped = append(r.Dropped, fmt.Sprintf("%v: %s", err, frame))
			mu.Unlock()
		},
		OnInternalError: func(err error, method string) {
			mu.Lock()
			r.Internal = append(r.Internal, method+": "+err.Error())
			mu.Unlock()
		},
	})
	defer client.Close()
	client.OnAny(func(method string, _ *jsonrpc.Value) {
		mu.Lock()
		r.Notifications = append(r.Notifications, method)
		mu.Unlock()
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	init, err := client.Initialize(ctx, mcp.InitializeRequestParams{
		ProtocolVersion: "2025-06-18",
		Capabilities:    mcp.ClientCapabilities{Roots: &mcp.ClientCapabilitiesRoots{ListChanged: ptr(true)}, Sampling: map[string]jsonrpc.Value{}},
		ClientInfo:      mcp.Implementation{Name: "turnspec-go-test", Version: "1.0.0"},
	})
	if err != nil {
		return fmt.Errorf("initialize: %w", err)
	}
	r.ProtocolVersion, r.ServerName = init.ProtocolVersion, init.ServerInfo.Name
	if err := client.NotifyNotificationsInitialized(ctx, mcp.NotificationParams{}); err != nil {
		return fmt.Errorf("notifications/initialized: %w", err)
	}

	tools, err := client.ToolsList(ctx, mcp.PaginatedRequestParams{})
	if err != nil {
		return fmt.Errorf("tools/list: %w", err)
	}
	for _, tool := range tools.Tools {
		r.Tools = append(r.Tools, tool.Name)
	}
	call := func(name string, arguments map[string]jsonrpc.Value) (mcp.CallToolResult, error) {
		return client.ToolsCall(ctx, mcp.CallToolRequestParams{Name: name, Arguments: arguments})
	}
	echoed, err := call("echo", map[string]jsonrpc.Value{"message": jsonrpc.StringValue("hello from turnspec")})
	if err != nil {
		return fmt.Errorf("tools/call echo: %w", err)
	}
	r.Echo = text(echoed.Content)
	sum, err := call("get-sum", map[string]jsonrpc.Value{"a": jsonrpc.IntValue(2), "b": jsonrpc.IntValue(40)})
	if err != nil {
		return fmt.Errorf("tools/call get-sum: %w", err)
	}
	r.Sum = text(sum.Content)
	// The server asks the client to sample its model while the tool call is in flight.
	sampledCall, err := call("trigger-sampling-request", map[string]jsonrpc.Value{"prompt": jsonrpc.StringValue("Say something"), "maxTokens": jsonrpc.IntValue(20)})
	if err != nil {
		return fmt.Errorf("tools/call trigger-sampling-request: %w", err)
	}
	r.SampledAnswer = text(sampledCall.Content)
	// The server asks for the client's roots after initialization, and reports what it got.
	time.Sleep(300 * time.Millisecond)
	roots, err := call("get-roots-list", map[string]jsonrpc.Value{})
	if err != nil {
		return fmt.Errorf("tools/call get-roots-list: %w", err)
	}
	r.RootsSeen = text(roots.Content)
	resources, err := client.ResourcesList(ctx, mcp.PaginatedRequestParams{})
	if err != nil {
		return fmt.Errorf("resources/list: %w", err)
	}
	r.Resources = len(resources.Resources)
	if _, err := client.Ping(ctx, mcp.PingRequestParams{}); err != nil {
		return fmt.Errorf("ping: %w", err)
	}
	r.Pinged = true
	unknown, err := call("no-such-tool", map[string]jsonrpc.Value{})
	if err != nil {
		return fmt.Errorf("tools/call no-such-tool: %w", err)
	}
	r.UnknownIsError = unknown.IsError != nil && *unknown.IsError
	// A member the schema does not declare is refused here, strictly, before anything is sent.
	_, err = client.ToolsCall(ctx, mcp.CallToolRequestParams{Name: "echo", Extra: map[string]jsonrpc.Value{"unexpected": jsonrpc.BoolValue(true)}})
	var local *jsonrpc.LocalError
	if errors.As(err, &local) {
		r.Refused = string(local.Kind) + ": " + local.Message
	}

	h.mu.Lock()
	r.Sampled, r.RootsAsked = len(h.sampled), h.roots
	h.mu.Unlock()
	mu.Lock()
	defer mu.Unlock()
	out, err := json.Marshal(r)
	if err != nil {
		return err
	}
	fmt.Println(string(out))
	return nil
}

func ptr[T any](x T) *T { return &x }

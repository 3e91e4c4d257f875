// Command ws-both runs both ends of the Go module generated from the MCP fixture in one
// process, over a WebSocket: a server with typed Handlers (which, while it answers a tools/call,
// asks its client to sample a model and sends it a log notification, and which asks for the
// client's roots once the client says it is initialized) and a client with typed
// ClientHandlers. It also lets a request outlive the client's request timeout and has the
// server answer with a registered error. It prints what each end saw as one JSON object for
// test/languages/go-websocket.test.ts to judge.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"turnspec.dev/examples/mcp"
	"turnspec.dev/examples/mcp/jsonrpc"
)

type report struct {
	mu              sync.Mutex
	ServerName      string   `json:"serverName"`
	Tools           []string `json:"tools"`
	Asked           string   `json:"asked"`
	Sampled         []string `json:"sampledByClient"`
	Logged          []string `json:"loggedToClient"`
	RootsSeen       []string `json:"rootsSeenByServer"`
	Initialized     bool     `json:"serverHeardInitialized"`
	Timeout         string   `json:"timeout"`
	RefusedCode     int64    `json:"refusedCode"`
	RefusedReason   string   `json:"refusedReason"`
	Dropped         []string `json:"dropped"`
	InternalErrors  []string `json:"internalErrors"`
	ServerStoppedOK bool     `json:"serverStoppedCleanly"`
}

func (r *report) add(list *[]string, s string) {
	r.mu.Lock()
	*list = append(*list, s)
	r.mu.Unlock()
}

// server answers one client's requests.
type server struct {
	conn *mcp.ServerConn
	r    *report
}

func (s *server) Initialize(context.Context, mcp.InitializeRequestParams) (mcp.InitializeResult, error) {
	return mcp.InitializeResult{ProtocolVersion: "2025-06-18", ServerInfo: mcp.Implementation{Name: "go-ws-server", Version: "1.0.0"}, Capabilities: mcp.ServerCapabilities{Tools: &mcp.ServerCapabilitiesTools{}}}, nil
}

func (s *server) Ping(context.Context, mcp.PingRequestParams) (mcp.EmptyResult, error) {
	return mcp.EmptyResult{}, nil
}

func (s *server) ToolsList(context.Context, mcp.PaginatedRequestParams) (mcp.ListToolsResult, error) {
	return mcp.ListToolsResult{Tools: []mcp.Tool{{Name: "ask"}, {Name: "slow"}}}, nil
}

func (s *server) ToolsCall(ctx context.Context, params mcp.CallToolRequestParams) (mcp.CallToolResult, error) {
	switch params.Name {
	case "ask":
		// A request to the client while this one waits on it: both directions on one connection.
		sampled, err := s.conn.SamplingCreateMessage(ctx, mcp.CreateMessageRequestParams{Messages: []mcp.SamplingMessage{{Role: mcp.RoleUser, Content: mcp.TextContent{Text: "What is 6 times 7?"}}}, MaxTokens: 10})
		if err != nil {
			return mcp.CallToolResult{}, err
		}
		answer := ""
		if text, ok := sampled.Content.(mcp.TextContent); ok {
			answer = text.Text
		}
		if err := s.conn.NotifyNotificationsMessage(ctx, mcp.LoggingMessageNotificationParams{Level: mcp.LoggingLevelInfo, Data: jsonrpc.StringValue("sampled " + answer)}); err != nil {
			return mcp.CallToolResult{}, err
		}
		return mcp.CallToolResult{Content: []mcp.ContentBlock{mcp.TextContent{Text: "the model said " + answer}}}, nil
	case "slow":
		select {
		case <-time.After(2 * time.Second):
		case <-ctx.Done():
		}
		return mcp.CallToolResult{Content: []mcp.ContentBlock{}}, nil
	}
	return mcp.CallToolResult{}, mcp.ProtocolError(mcp.ReasonInvalidParams, "no tool "+params.Name, jsonrpc.Member{Key: "name", Value: jsonrpc.StringValue(params.Name)})
}

func (s *server) ResourcesList(context.Context, mcp.PaginatedRequestParams) (mcp.ListResourcesResult, error) {
	return mcp.ListResourcesResult{Resources: []mcp.Resource{}}, nil
}

// client answers the server's requests.
type client struct{ r *report }

func (c *client) SamplingCreateMessage(_ context.Context, params mcp.CreateMessageRequestParams) (mcp.CreateMessageResult, error) {
	question := ""
	if text, ok := params.Messages[0].Content.(mcp.TextContent); ok {
		question = text.Text
	}
	c.r.add(&c.r.Sampled, question)
	return mcp.CreateMessageResult{Role: mcp.RoleAssistant, Content: mcp.TextContent{Text: "42"}, Model: "go-test-model"}, nil
}

func (c *client) RootsList(context.Context, mcp.ListRootsRequestParams) (mcp.ListRootsResult, error) {
	return mcp.ListRootsResult{Roots: []mcp.Root{{URI: "file:///work/project"}}}, nil
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "ws-both:", err)
		os.Exit(1)
	}
}

func run() error {
	r := &report{}
	options := func(side string) jsonrpc.ConnOptions {
		return jsonrpc.ConnOptions{
			RequestTimeout:  500 * time.Millisecond,
			OnProtocolError: func(err *jsonrpc.LocalError, frame []byte) { r.add(&r.Dropped, side+": "+err.Error()) },
			OnInternalError: func(err error, method string) { r.add(&r.InternalErrors, side+" "+method+": "+err.Error()) },
		}
	}
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	served := make(chan error, 1)
	httpServer := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		transport, err := jsonrpc.AcceptWebSocket(w, req, nil)
		if err != nil {
			served <- err
			return
		}
		served <- mcp.Serve(req.Context(), transport, func(conn *mcp.ServerConn) mcp.Handlers {
			conn.OnNotificationsInitialized(func(mcp.NotificationParams) {
				r.mu.Lock()
				r.Initialized = true
				r.mu.Unlock()
				// A notification handler must not block: the request it leads to runs on its own.
				go func() {
					roots, err := conn.RootsList(context.Background(), mcp.ListRootsRequestParams{})
					if err != nil {
						r.add(&r.RootsSeen, "error: "+err.Error())
						return
					}
					for _, root := range roots.Roots {
						r.add(&r.RootsSeen, root.URI)
					}
				}()
			})
			return &server{conn: conn, r: r}
		}, options("server"))
	})}
	go func() { _ = httpServer.Serve(listener) }()
	defer httpServer.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	transport, err := jsonrpc.DialWebSocket(ctx, "ws://"+listener.Addr().String()+"/", nil)
	if err != nil {
		return err
	}
	c := mcp.NewClient(transport, &client{r: r}, options("client"))
	c.OnNotificationsMessage(func(n mcp.LoggingMessageNotificationParams) { r.add(&r.Logged, n.Data.Str()) })

	init, err := c.Initialize(ctx, mcp.InitializeRequestParams{ProtocolVersion: "2025-06-18", ClientInfo: mcp.Implementation{Name: "go-ws-client", Version: "1.0.0"}})
	if err != nil {
		return fmt.Errorf("initialize: %w", err)
	}
	r.ServerName = init.ServerInfo.Name
	if err := c.NotifyNotificationsInitialized(ctx, mcp.NotificationParams{}); err != nil {
		return err
	}
	tools, err := c.ToolsList(ctx, mcp.PaginatedRequestParams{})
	if err != nil {
		return fmt.Errorf("tools/list: %w", err)
	}
	for _, tool := range tools.Tools {
		r.Tools = append(r.Tools, tool.Name)
	}
	asked, err := c.ToolsCall(ctx, mcp.CallToolRequestParams{Name: "ask"})
	if err != nil {
		return fmt.Errorf("tools/call ask: %w", err)
	}
	var texts []string
	for _, block := range asked.Content {
		if text, ok := block.(mcp.TextContent); ok {
			texts = append(texts, text.Text)
		}
	}
	r.Asked = strings.Join(texts, " ")

	_, err = c.ToolsCall(ctx, mcp.CallToolRequestParams{Name: "slow"})
	var local *jsonrpc.LocalError
	if errors.As(err, &local) {
		r.Timeout = string(local.Kind)
	}
	_, err = c.ToolsCall(ctx, mcp.CallToolRequestParams{Name: "missing"})
	var wire *jsonrpc.Error
	if errors.As(err, &wire) {
		r.RefusedCode, r.RefusedReason = wire.Code, wire.Reason()
	}
	if _, err := c.Ping(ctx, mcp.PingRequestParams{}); err != nil {
		return fmt.Errorf("ping: %w", err)
	}
	// Wait for the roots the server asked for once it heard initialized.
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		r.mu.Lock()
		done := len(r.RootsSeen) > 0
		r.mu.Unlock()
		if done {
			break
		}
	}
	_ = c.Close()
	select {
	case err := <-served:
		r.ServerStoppedOK = err == nil
	case <-time.After(5 * time.Second):
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	out, err := json.Marshal(r)
	if err != nil {
		return err
	}
	fmt.Println(string(out))
	return nil
}

package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"sync"
	"time"

	"turnspec.dev/agp"
	"turnspec.dev/agp/jsonrpc"
)

// gateway holds every thread, turn and approval request of the one connection it serves.
type gateway struct {
	providerURL string
	model       string
	http        *http.Client
	conn        *agp.ServerConn

	mu       sync.Mutex
	threads  map[string]*threadState
	turnIDs  map[string]bool
	requests map[string]*pendingRequest
}

type threadState struct {
	thread agp.Thread
	turns  []*turnState
}

func newGateway(providerURL, model string, client *http.Client) *gateway {
	return &gateway{providerURL: providerURL, model: model, http: client, threads: map[string]*threadState{}, turnIDs: map[string]bool{}, requests: map[string]*pendingRequest{}}
}

// handlers is what agp.Serve asks for: the gateway's handlers, given the connection they
// notify and call the client over.
func (g *gateway) handlers(conn *agp.ServerConn) agp.Handlers {
	g.conn = conn
	return g
}

// shutdown ends every turn still running: the client is gone.
func (g *gateway) shutdown() {
	g.mu.Lock()
	var running []*turnState
	for _, th := range g.threads {
		running = append(running, th.turns...)
	}
	g.mu.Unlock()
	for _, t := range running {
		t.cancel()
	}
}

// now is a timestamp as the protocol writes them (RFC 3339, milliseconds, UTC).
func now() string { return time.Now().UTC().Format("2006-01-02T15:04:05.000Z07:00") }

func newID(prefix string) string {
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return prefix + hex.EncodeToString(b)
}

func ptr[T any](x T) *T { return &x }

func (g *gateway) threadOf(id string) (*threadState, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	th, ok := g.threads[id]
	if !ok {
		return nil, agp.ProtocolError(agp.ReasonThreadNotFound, "no thread "+id, jsonrpc.Member{Key: "thread_id", Value: jsonrpc.StringValue(id)})
	}
	return th, nil
}

func (g *gateway) turnOf(threadID, turnID string) (*turnState, error) {
	th, err := g.threadOf(threadID)
	if err != nil {
		return nil, err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, t := range th.turns {
		if t.id == turnID {
			return t, nil
		}
	}
	return nil, agp.ProtocolError(agp.ReasonTurnNotFound, fmt.Sprintf("thread %s has no turn %s", threadID, turnID), jsonrpc.Member{Key: "thread_id", Value: jsonrpc.StringValue(threadID)}, jsonrpc.Member{Key: "turn_id", Value: jsonrpc.StringValue(turnID)})
}

// invalidParams refuses a field this gateway does not serve, naming it: a field accepted and
// ignored would mislead the client.
func invalidParams(message, field string) error {
	return agp.ProtocolError(agp.ReasonInvalidParams, message, jsonrpc.Member{Key: "field", Value: jsonrpc.StringValue(field)})
}

func notServed(method string) error {
	return agp.ProtocolError(agp.ReasonMethodNotFound, method+" is not served by this gateway")
}

func (g *gateway) ThreadStart(_ context.Context, params agp.ThreadStartParams) (agp.ThreadStartResponse, error) {
	if params.ModelProvider != nil {
		return agp.ThreadStartResponse{}, invalidParams("thread/start: model_provider is not served by this gateway", "model_provider")
	}
	cwd := ""
	if params.Cwd != nil {
		cwd = *params.Cwd
	} else if wd, err := os.Getwd(); err == nil {
		cwd = wd
	}
	thread := agp.Thread{ID: newID("thr_"), WorkspaceID: "ws_go", Cwd: cwd, Mode: agp.TurnModeChat, CreatedAt: now(), Model: params.Model}
	if params.WorkspaceID != nil {
		thread.WorkspaceID = *params.WorkspaceID
	}
	if params.Mode != nil {
		thread.Mode = *params.Mode
	}
	g.mu.Lock()
	g.threads[thread.ID] = &threadState{thread: thread}
	g.mu.Unlock()
	return agp.ThreadStartResponse{Thread: thread}, nil
}

func (g *gateway) ThreadGet(_ context.Context, params agp.ThreadGetParams) (agp.ThreadGetResponse, error) {
	th, err := g.threadOf(params.ThreadID)
	if err != nil {
		return agp.ThreadGetResponse{}, err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return agp.ThreadGetResponse{Thread: th.thread}, nil
}

func (g *gateway) ThreadTimelinePage(_ context.Context, params agp.ThreadTimelinePageParams) (agp.ThreadTimelinePageResponse, error) {
	if params.Cursor != nil {
		return agp.ThreadTimelinePageResponse{}, invalidParams("thread/timeline/page: this gateway gives out no cursors", "cursor")
	}
	th, err := g.threadOf(params.ThreadID)
	if err != nil {
		return agp.ThreadTimelinePageResponse{}, err
	}
	g.mu.Lock()
	turns := append([]*turnState(nil), th.turns...)
	g.mu.Unlock()
	blocks := []agp.ThreadTimelineBlock{}
	for _, t := range turns {
		snapshot := t.snapshot()
		blocks = append(blocks, agp.ThreadTimelineBlock{BlockID: "blk:" + t.id, Kind: agp.ThreadTimelineBlockKindTurnWork, TurnID: t.id, Status: snapshot.Status, CreatedAtUnixMicros: t.createdMicros, UserText: ptr(t.text)})
	}
	page := blocks
	if params.Limit != nil && int(*params.Limit) < len(blocks) {
		page = blocks[:*params.Limit]
	}
	return agp.ThreadTimelinePageResponse{ThreadID: params.ThreadID, Blocks: page, Page: agp.ThreadTimelinePageResponsePage{HasMore: len(page) < len(blocks)}}, nil
}

func (g *gateway) TurnStart(ctx context.Context, params agp.TurnStartParams) (agp.TurnStartResponse, error) {
	th, err := g.threadOf(params.ThreadID)
	if err != nil {
		return agp.TurnStartResponse{}, err
	}
	if err := refuseUnserved(params); err != nil {
		return agp.TurnStartResponse{}, err
	}
	g.mu.Lock()
	if g.turnIDs[params.TurnID] {
		g.mu.Unlock()
		return agp.TurnStartResponse{}, agp.ProtocolError(agp.ReasonDuplicateTurnID, "turn id "+params.TurnID+" is already used", jsonrpc.Member{Key: "turn_id", Value: jsonrpc.StringValue(params.TurnID)})
	}
	if active := th.thread.ActiveTurnID; active != nil {
		g.mu.Unlock()
		return agp.TurnStartResponse{}, agp.ProtocolError(agp.ReasonTurnInProgress, fmt.Sprintf("thread %s is running turn %s", th.thread.ID, *active), jsonrpc.Member{Key: "active_turn_id", Value: jsonrpc.StringValue(*active)})
	}
	t := g.admit(th, params)
	g.mu.Unlock()
	// The turn runs once the response is on its way: nothing of it comes before turn/start's result.
	jsonrpc.AfterReply(ctx, func() { g.run(t) })
	return agp.TurnStartResponse{Turn: t.snapshot()}, nil
}

// refuseUnserved refuses what this gateway does not serve, naming it.
func refuseUnserved(params agp.TurnStartParams) error {
	if params.ExecutionBackend != nil {
		return agp.ProtocolError(agp.ReasonExecutionBackendUnavailable, "this gateway serves only its own model provider", jsonrpc.Member{Key: "execution_backend", Value: mustValue("ExecutionBackend", params.ExecutionBackend)})
	}
	if params.ModelProvider != nil {
		return invalidParams("turn/start: model_provider is not served by this gateway", "model_provider")
	}
	if params.CliRuntimeOptions != nil {
		return invalidParams("turn/start: cli_runtime_options is not served by this gateway", "cli_runtime_options")
	}
	if params.SandboxPolicy != nil {
		return invalidParams("turn/start: sandbox_policy is not served by this gateway", "sandbox_policy")
	}
	if p := params.PermissionProfile; p != nil {
		for _, field := range []struct {
			name  string
			given bool
		}{{"allowed_tools", p.AllowedTools != nil}, {"denied_tools", p.DeniedTools != nil}, {"allowed_paths", p.AllowedPaths != nil}} {
			if field.given {
				return invalidParams("turn/start: permission_profile."+field.name+" is not served by this gateway", "permission_profile."+field.name)
			}
		}
	}
	for i, input := range params.Input {
		if _, ok := input.(agp.UserInputText); !ok {
			return invalidParams(fmt.Sprintf("turn/start: input/%d is not text; this gateway takes text input only", i), "input")
		}
	}
	return nil
}

// mustValue is a value of a named type as JSON, for error data.
func mustValue(typeName string, x any) jsonrpc.Value {
	v, err := agp.WriteType(typeName, x)
	if err != nil {
		return jsonrpc.StringValue(err.Error())
	}
	return v
}

func (g *gateway) TurnCancel(ctx context.Context, params agp.TurnCancelParams) (agp.TurnCancelResponse, error) {
	t, err := g.turnOf(params.ThreadID, params.TurnID)
	if err != nil {
		return agp.TurnCancelResponse{}, err
	}
	if t.hasEnded() {
		status := t.snapshot().Status
		return agp.TurnCancelResponse{}, agp.ProtocolError(agp.ReasonTurnNotActive, fmt.Sprintf("turn %s already ended %s", t.id, status), jsonrpc.Member{Key: "turn_id", Value: jsonrpc.StringValue(t.id)}, jsonrpc.Member{Key: "status", Value: jsonrpc.StringValue(string(status))})
	}
	message := "cancelled by the client"
	if params.Reason != nil {
		message = *params.Reason
	}
	g.finish(ctx, t, outcome{failure: &agp.TurnFailure{Kind: agp.TurnFailureKindCancelled, Message: message}, status: agp.TurnStatusInterrupted})
	return agp.TurnCancelResponse{Turn: t.snapshot()}, nil
}

// TurnResume: no turn of this gateway ever blocks.
func (g *gateway) TurnResume(_ context.Context, params agp.TurnResumeParams) (agp.TurnResumeResponse, error) {
	t, err := g.turnOf(params.ThreadID, params.TurnID)
	if err != nil {
		return agp.TurnResumeResponse{}, err
	}
	status := t.snapshot().Status
	return agp.TurnResumeResponse{}, agp.ProtocolError(agp.ReasonTurnNotBlocked, fmt.Sprintf("turn %s is %s, not Blocked", t.id, status), jsonrpc.Member{Key: "turn_id", Value: jsonrpc.StringValue(t.id)}, jsonrpc.Member{Key: "status", Value: jsonrpc.StringValue(string(status))})
}

func (g *gateway) TurnGet(_ context.Context, params agp.TurnGetParams) (agp.TurnGetResponse, error) {
	t, err := g.turnOf(params.ThreadID, params.TurnID)
	if err != nil {
		return agp.TurnGetResponse{}, err
	}
	return agp.TurnGetResponse{Turn: t.snapshot()}, nil
}

func (g *gateway) TurnItems(_ context.Context, params agp.TurnItemsParams) (agp.TurnItemsResponse, error) {
	t, err := g.turnOf(params.ThreadID, params.TurnID)
	if err != nil {
		return agp.TurnItemsResponse{}, err
	}
	var after int64
	if params.AfterSequence != nil {
		after = *params.AfterSequence
	}
	t.mu.Lock()
	events := []agp.TurnItemEvent{}
	for _, e := range t.events {
		if e.Sequence > after && (params.Limit == nil || int64(len(events)) < *params.Limit) {
			events = append(events, e)
		}
	}
	workspace := *t.turn.WorkspaceID
	t.mu.Unlock()
	last := after
	if len(events) > 0 {
		last = events[len(events)-1].Sequence
	}
	return agp.TurnItemsResponse{ThreadID: t.threadID, WorkspaceID: workspace, TurnID: t.id, Events: events, LastSequence: last}, nil
}

// The methods of the capabilities this gateway does not claim: work, questions, routes.

func (g *gateway) TurnWorkPage(context.Context, agp.TurnWorkPageParams) (agp.TurnWorkPageResponse, error) {
	return agp.TurnWorkPageResponse{}, notServed(agp.MethodTurnWorkPage)
}

func (g *gateway) TurnWorkItemsGet(context.Context, agp.TurnWorkItemsGetParams) (agp.TurnWorkItemsGetResponse, error) {
	return agp.TurnWorkItemsGetResponse{}, notServed(agp.MethodTurnWorkItemsGet)
}

func (g *gateway) TurnQuestionRespond(context.Context, agp.TurnQuestionRespondParams) (agp.TurnQuestionRespondResponse, error) {
	return agp.TurnQuestionRespondResponse{}, notServed(agp.MethodTurnQuestionRespond)
}

func (g *gateway) AgentRouteCreate(context.Context, agp.AgentDelegationRouteCreateParams) (agp.AgentDelegationRouteProjection, error) {
	return agp.AgentDelegationRouteProjection{}, notServed(agp.MethodAgentRouteCreate)
}

func (g *gateway) AgentRouteList(context.Context, agp.AgentDelegationRouteListParams) (agp.AgentDelegationRouteListResponse, error) {
	return agp.AgentDelegationRouteListResponse{}, notServed(agp.MethodAgentRouteList)
}

func (g *gateway) AgentRouteRevoke(context.Context, agp.AgentDelegationRouteRevokeParams) (agp.AgentDelegationRouteProjection, error) {
	return agp.AgentDelegationRouteProjection{}, notServed(agp.MethodAgentRouteRevoke)
}

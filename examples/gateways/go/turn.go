package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"turnspec.dev/agp"
)

// turnState is one turn. Its mutex is held while one of its notifications is numbered and
// sent, so that the order of the sequence numbers is the order on the wire.
type turnState struct {
	id            string
	threadID      string
	text          string
	input         []agp.UserInput
	createdMicros int64
	ctx           context.Context
	cancel        context.CancelFunc

	mu       sync.Mutex
	turn     agp.Turn
	sequence int64
	events   []agp.TurnItemEvent
	ended    bool
	answer   string
	// grants are the scope hashes granted allow_for_turn: they end with the turn.
	grants  map[string]bool
	pending map[*pendingRequest]bool
	// open holds the items started and not yet completed, by id: a turn that ends
	// completes each of them once before its terminal notification.
	open map[string]agp.TurnItem
}

func (t *turnState) snapshot() agp.Turn {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.turn
}

func (t *turnState) hasEnded() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.ended
}

// admit registers a new turn of the thread and marks it active; it has not started running.
// Called with g.mu held.
func (g *gateway) admit(th *threadState, params agp.TurnStartParams) *turnState {
	mode := th.thread.Mode
	if params.Mode != nil {
		mode = *params.Mode
	}
	model := g.model
	if params.Model != nil {
		model = *params.Model
	} else if th.thread.Model != nil {
		model = *th.thread.Model
	}
	permission := agp.TurnPermissionModeFullAccess
	source := agp.TurnPermissionProfileSourceDefaulted
	if params.PermissionProfile != nil && params.PermissionProfile.Mode != nil {
		permission, source = *params.PermissionProfile.Mode, agp.TurnPermissionProfileSourceComposer
	} else if params.PermissionProfile != nil {
		source = agp.TurnPermissionProfileSourceComposer
	}
	turn := agp.Turn{
		ID:                params.TurnID,
		ThreadID:          ptr(th.thread.ID),
		WorkspaceID:       ptr(th.thread.WorkspaceID),
		Status:            agp.TurnStatusInProgress,
		Mode:              ptr(mode),
		Model:             ptr(model),
		CreatedAt:         ptr(now()),
		PromptManifest:    nil,
		PermissionProfile: agp.TurnPermissionProfileSnapshot{Mode: permission, Source: source, EffectivePolicy: policies[permission]},
	}
	// It has no skills, MCP servers or tools beyond the three: every capability asked for is not found.
	if params.Capabilities != nil {
		turn.Capabilities = []agp.TurnCapabilityResolution{}
		for _, c := range params.Capabilities {
			turn.Capabilities = append(turn.Capabilities, agp.TurnCapabilityResolution{CapabilityID: c.ID, Status: agp.TurnCapabilityResolutionStatusRejected, Reason: agp.TurnCapabilityResolutionReasonNotFound})
		}
	}
	var texts []string
	for _, input := range params.Input {
		if text, ok := input.(agp.UserInputText); ok {
			texts = append(texts, text.Text)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	t := &turnState{id: params.TurnID, threadID: th.thread.ID, text: strings.Join(texts, "\n"), input: params.Input, createdMicros: time.Now().UnixMicro(), ctx: ctx, cancel: cancel, turn: turn, grants: map[string]bool{}, pending: map[*pendingRequest]bool{}}
	g.turnIDs[t.id] = true
	th.turns = append(th.turns, t)
	th.thread.ActiveTurnID = ptr(t.id)
	return t
}

// send numbers one notification of the turn and sends it; an item event is kept for turn/items.
func (g *gateway) send(t *turnState, method, typeName string, build func(sequence int64) any, notify func(n any) error) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return g.sendLocked(t, method, typeName, build, notify)
}

// sendLocked is send with t.mu already held.
func (g *gateway) sendLocked(t *turnState, method, typeName string, build func(sequence int64) any, notify func(n any) error) error {
	t.sequence++
	n := build(t.sequence)
	if strings.HasPrefix(method, "item/") {
		params, err := agp.WriteType(typeName, n)
		if err != nil {
			return err
		}
		t.events = append(t.events, agp.TurnItemEvent{Sequence: t.sequence, Method: method, Params: params.Map(), RecordedAt: now()})
	}
	return notify(n)
}

func (g *gateway) turnStarted(t *turnState) error {
	return g.send(t, agp.NotificationTurnStarted, "TurnStartedNotification", func(seq int64) any {
		return agp.TurnStartedNotification{ThreadID: t.threadID, TurnID: t.id, Sequence: seq, Turn: t.turn}
	}, func(n any) error {
		return g.conn.NotifyTurnStarted(context.Background(), n.(agp.TurnStartedNotification))
	})
}

func (g *gateway) itemStarted(t *turnState, id string, item agp.TurnItem) error {
	// The check and the send hold one lock, so no item starts after the turn's terminal notification.
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ended {
		return errTurnEnded
	}
	if t.open == nil {
		t.open = map[string]agp.TurnItem{}
	}
	t.open[id] = item
	return g.sendLocked(t, agp.NotificationItemStarted, "ItemStartedNotification", func(seq int64) any {
		return agp.ItemStartedNotification{ThreadID: t.threadID, TurnID: t.id, Sequence: seq, ItemID: id, Item: item}
	}, func(n any) error {
		return g.conn.NotifyItemStarted(context.Background(), n.(agp.ItemStartedNotification))
	})
}

// itemCompleted completes an open item; an item the turn's end already completed is left as it is.
func (g *gateway) itemCompleted(t *turnState, id string, item agp.TurnItem) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, open := t.open[id]; !open {
		return errTurnEnded
	}
	delete(t.open, id)
	return g.sendLocked(t, agp.NotificationItemCompleted, "ItemCompletedNotification", func(seq int64) any {
		return agp.ItemCompletedNotification{ThreadID: t.threadID, TurnID: t.id, Sequence: seq, ItemID: id, Item: item}
	}, func(n any) error {
		return g.conn.NotifyItemCompleted(context.Background(), n.(agp.ItemCompletedNotification))
	})
}

// delta sends a piece of an item's text (agent_message) or of a command's output (stdout, stderr).
func (g *gateway) delta(t *turnState, id string, stream agp.ItemDeltaStream, text string) error {
	method := agp.NotificationItemAgentMessageDelta
	notify := g.conn.NotifyItemAgentMessageDelta
	if stream != agp.ItemDeltaStreamAgentMessage {
		method, notify = agp.NotificationItemCommandExecutionOutputDelta, g.conn.NotifyItemCommandExecutionOutputDelta
	}
	// The check and the send hold the same lock, so no delta follows the item's completion
	// (or the turn's end, which completes every open item).
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, open := t.open[id]; !open {
		return errTurnEnded
	}
	return g.sendLocked(t, method, "ItemDeltaNotification", func(seq int64) any {
		return agp.ItemDeltaNotification{ThreadID: t.threadID, TurnID: t.id, Sequence: seq, ItemID: id, Stream: stream, Delta: text}
	}, func(n any) error { return notify(context.Background(), n.(agp.ItemDeltaNotification)) })
}

func (g *gateway) timelineChanged(t *turnState) error {
	return g.conn.NotifyThreadTimelineBlocksChanged(context.Background(), agp.ThreadTimelineBlocksChangedNotification{ThreadID: t.threadID, ChangedBlockIDs: []string{"blk:" + t.id}, TurnID: ptr(t.id)})
}

// item sends an item's start and completion, with what comes between them.
func (g *gateway) item(t *turnState, id string, started, completed agp.TurnItem, between func() error) error {
	if err := g.itemStarted(t, id, started); err != nil {
		return err
	}
	if between != nil {
		if err := between(); err != nil {
			return err
		}
	}
	return g.itemCompleted(t, id, completed)
}

// outcome is how a turn ends: with a failure and its status, or completed (with usage when the model reported some).
type outcome struct {
	failure *agp.TurnFailure
	status  agp.TurnStatus
	usage   *agp.TurnUsage
}

// finish ends the turn once: open approval requests are resolved cancelled, then the one
// terminal notification.
func (g *gateway) finish(ctx context.Context, t *turnState, o outcome) {
	t.mu.Lock()
	if t.ended {
		t.mu.Unlock()
		return
	}
	var open []*pendingRequest
	for p := range t.pending {
		open = append(open, p)
	}
	t.mu.Unlock()
	for _, p := range open {
		g.resolve(p, agp.TurnPermissionApprovalResolutionCancelled)
	}
	t.mu.Lock()
	if t.ended {
		t.mu.Unlock()
		return
	}
	t.ended = true
	left := t.open
	t.open = nil
	t.mu.Unlock()
	t.cancel()
	// Items still open end with the turn: cancelled when it was interrupted, failed otherwise,
	// in the order they started.
	ids := make([]string, 0, len(left))
	for id := range left {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return startedBefore(t, ids[i], ids[j]) })
	itemStatus := agp.TurnItemStatusFailed
	if o.status == agp.TurnStatusInterrupted {
		itemStatus = agp.TurnItemStatusCancelled
	}
	for _, id := range ids {
		if err := g.itemEndedWithTurn(t, id, left[id], itemStatus); err != nil {
			fmt.Fprintf(os.Stderr, "turn %s: %v\n", t.id, err)
		}
	}
	g.mu.Lock()
	if th := g.threads[t.threadID]; th != nil {
		th.thread.ActiveTurnID = nil
	}
	g.mu.Unlock()
	var err error
	if o.failure != nil {
		err = g.send(t, agp.NotificationTurnFailed, "TurnFailedNotification", func(seq int64) any {
			t.turn.Status, t.turn.Error, t.turn.CompletedAt = o.status, o.failure, ptr(now())
			return agp.TurnFailedNotification{ThreadID: t.threadID, TurnID: t.id, Sequence: seq, Turn: t.turn, Error: *o.failure}
		}, func(n any) error { return g.conn.NotifyTurnFailed(ctx, n.(agp.TurnFailedNotification)) })
	} else {
		err = g.send(t, agp.NotificationTurnCompleted, "TurnCompletedNotification", func(seq int64) any {
			t.turn.Status, t.turn.Usage, t.turn.CompletedAt = agp.TurnStatusCompleted, o.usage, ptr(now())
			return agp.TurnCompletedNotification{ThreadID: t.threadID, TurnID: t.id, Sequence: seq, Turn: t.turn, Usage: o.usage}
		}, func(n any) error { return g.conn.NotifyTurnCompleted(ctx, n.(agp.TurnCompletedNotification)) })
	}
	if err == nil {
		err = g.timelineChanged(t)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "turn %s: %v\n", t.id, err)
	}
}

// errTurnEnded is what starting or completing an item says once the turn's end has closed its items.
var errTurnEnded = errors.New("the turn has ended")

// startedBefore says whether item a's start was recorded before item b's.
func startedBefore(t *turnState, a, b string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	seq := func(id string) int64 {
		for _, e := range t.events {
			if e.Method == agp.NotificationItemStarted && e.Params["itemId"].Str() == id {
				return e.Sequence
			}
		}
		return 0
	}
	return seq(a) < seq(b)
}

// itemEndedWithTurn completes an item the turn's end left open, with the given status.
func (g *gateway) itemEndedWithTurn(t *turnState, id string, item agp.TurnItem, status agp.TurnItemStatus) error {
	switch it := item.(type) {
	case agp.TurnItemCommandExecution:
		it.Status = status
		item = it
	case agp.TurnItemFileChange:
		it.Status = status
		item = it
	case agp.TurnItemAgentMessage:
		it.Status = status
		item = it
	case agp.TurnItemUserMessage:
		it.Status = status
		item = it
	default:
		return fmt.Errorf("item %s of type %T has no status to end it with", id, item)
	}
	return g.send(t, agp.NotificationItemCompleted, "ItemCompletedNotification", func(seq int64) any {
		return agp.ItemCompletedNotification{ThreadID: t.threadID, TurnID: t.id, Sequence: seq, ItemID: id, Item: item}
	}, func(n any) error {
		return g.conn.NotifyItemCompleted(context.Background(), n.(agp.ItemCompletedNotification))
	})
}

// run runs the turn to its end; whatever stops it early fails it.
func (g *gateway) run(t *turnState) {
	usage, err := g.runTurn(t)
	if t.hasEnded() {
		return
	}
	if err != nil {
		kind := agp.TurnFailureKindInternal
		var provider *providerError
		if errors.As(err, &provider) {
			kind = agp.TurnFailureKindProviderError
		}
		g.finish(context.Background(), t, outcome{failure: &agp.TurnFailure{Kind: kind, Message: err.Error()}, status: agp.TurnStatusFailed})
		return
	}
	g.finish(context.Background(), t, outcome{usage: usage})
}

// runTurn is the turn: the user's message, then model calls (and, in Agent mode, tool calls)
// until an answer. It returns the usage the model reported, if any.
func (g *gateway) runTurn(t *turnState) (*agp.TurnUsage, error) {
	if err := g.turnStarted(t); err != nil {
		return nil, err
	}
	if err := g.timelineChanged(t); err != nil {
		return nil, err
	}
	userID := newID("item_")
	user := agp.TurnItemUserMessage{ID: userID, Status: agp.TurnItemStatusInProgress, Content: t.input}
	done := user
	done.Status = agp.TurnItemStatusCompleted
	if err := g.item(t, userID, user, done, nil); err != nil {
		return nil, err
	}
	messages := g.history(t)
	snapshot := t.snapshot()
	agent := snapshot.Mode != nil && *snapshot.Mode == agp.TurnModeAgent
	th, err := g.threadOf(t.threadID)
	if err != nil {
		return nil, err
	}
	g.mu.Lock()
	cwd := th.thread.Cwd
	g.mu.Unlock()
	var usage agp.TurnUsage
	reported := false
	for round := int64(1); ; round++ {
		completion, err := g.callModel(t, *snapshot.Model, messages, agent)
		if err != nil {
			return nil, err
		}
		if t.hasEnded() {
			return nil, nil
		}
		if u := completion.Usage; u != nil {
			reported = true
			usage.InputTokens += u.PromptTokens
			usage.OutputTokens += u.CompletionTokens
			usage.TotalTokens = usage.InputTokens + usage.OutputTokens
		}
		if len(completion.Choices) == 0 {
			return nil, &providerError{"the model's answer has no choices[0].message"}
		}
		message := completion.Choices[0].Message
		if message.ReasoningContent != "" {
			id := newID("item_")
			started := agp.TurnItemReasoning{ID: id, Status: agp.TurnItemStatusInProgress, Round: ptr(round)}
			completed := agp.TurnItemReasoning{ID: id, Status: agp.TurnItemStatusCompleted, Round: ptr(round), Text: message.ReasoningContent}
			if err := g.item(t, id, started, completed, nil); err != nil {
				return nil, err
			}
		}
		content := ""
		if message.Content != nil {
			content = *message.Content
		}
		if content != "" {
			id := newID("item_")
			started := agp.TurnItemAgentMessage{ID: id, Status: agp.TurnItemStatusInProgress, Round: ptr(round)}
			completed := agp.TurnItemAgentMessage{ID: id, Status: agp.TurnItemStatusCompleted, Round: ptr(round), Text: content}
			if err := g.item(t, id, started, completed, func() error { return g.delta(t, id, agp.ItemDeltaStreamAgentMessage, content) }); err != nil {
				return nil, err
			}
		}
		calls := message.ToolCalls
		if !agent {
			calls = nil
		}
		if len(calls) == 0 {
			t.mu.Lock()
			t.answer = content
			t.mu.Unlock()
			break
		}
		messages = append(messages, chatMessage{Role: "assistant", Content: message.Content, ToolCalls: calls})
		for _, call := range calls {
			result := g.runTool(t, call, cwd, round)
			if t.hasEnded() {
				return nil, nil
			}
			messages = append(messages, chatMessage{Role: "tool", Content: ptr(result), ToolCallID: call.ID})
		}
	}
	if reported {
		return &usage, nil
	}
	return nil, nil
}

// history is the model's view of the thread: its earlier questions and answers, then this turn's text.
func (g *gateway) history(current *turnState) []chatMessage {
	th, err := g.threadOf(current.threadID)
	if err != nil {
		return nil
	}
	g.mu.Lock()
	turns := append([]*turnState(nil), th.turns...)
	g.mu.Unlock()
	var messages []chatMessage
	for _, t := range turns {
		if t == current {
			break
		}
		messages = append(messages, chatMessage{Role: "user", Content: ptr(t.text)})
		t.mu.Lock()
		answer := t.answer
		t.mu.Unlock()
		if answer != "" {
			messages = append(messages, chatMessage{Role: "assistant", Content: ptr(answer)})
		}
	}
	return append(messages, chatMessage{Role: "user", Content: ptr(current.text)})
}

package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"

	"turnspec.dev/agp"
	"turnspec.dev/agp/jsonrpc"
)

// policy is the effective policy of a permission mode: how each kind of action is decided.
func policy(read, write, shell, network agp.PermissionBehavior) agp.ToolPermissionPolicySnapshot {
	return agp.ToolPermissionPolicySnapshot{
		DefaultBehavior:   agp.PermissionBehaviorAsk,
		FileRead:          read,
		FileWrite:         write,
		ShellCommand:      shell,
		Network:           network,
		McpRead:           agp.PermissionBehaviorAsk,
		McpWriteOrUnknown: agp.PermissionBehaviorAsk,
		DynamicSkillTool:  agp.PermissionBehaviorDeny,
		ComputerUse:       agp.PermissionBehaviorDeny,
		TaskSubagent:      agp.PermissionBehaviorDeny,
	}
}

const (
	allow = agp.PermissionBehaviorAllow
	ask   = agp.PermissionBehaviorAsk
)

// policies: full_access allows everything; supervised allows file reads and asks before file
// writes, shell commands and the network; auto_accept_edits allows writes too.
var policies = map[agp.TurnPermissionMode]agp.ToolPermissionPolicySnapshot{
	agp.TurnPermissionModeFullAccess:      fullAccess(),
	agp.TurnPermissionModeAutoAcceptEdits: policy(allow, allow, ask, ask),
	agp.TurnPermissionModeSupervised:      policy(allow, ask, ask, ask),
}

func fullAccess() agp.ToolPermissionPolicySnapshot {
	p := policy(allow, allow, allow, allow)
	p.DefaultBehavior, p.McpRead, p.McpWriteOrUnknown, p.DynamicSkillTool, p.ComputerUse, p.TaskSubagent = allow, allow, allow, allow, allow, allow
	return p
}

// behaviorOf is how the turn's policy decides an action.
func behaviorOf(p agp.ToolPermissionPolicySnapshot, action agp.PermissionActionKind) agp.PermissionBehavior {
	switch action {
	case agp.PermissionActionKindFileRead:
		return p.FileRead
	case agp.PermissionActionKindFileWrite:
		return p.FileWrite
	case agp.PermissionActionKindShellCommand:
		return p.ShellCommand
	case agp.PermissionActionKindNetwork:
		return p.Network
	}
	return p.DefaultBehavior
}

// pendingRequest is an approval request the client has to answer.
type pendingRequest struct {
	request    agp.TurnPermissionApprovalRequest
	turn       *turnState
	resolution agp.TurnPermissionApprovalResolution
	resolvedAt string
	answered   chan agp.TurnPermissionApprovalResolution
}

// scopeHash names what an approval covers: the tool and its arguments.
func scopeHash(tool string, args map[string]jsonrpc.Value) string {
	keys := make([]string, 0, len(args))
	for k := range args {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	h := sha256.New()
	h.Write([]byte(tool))
	for _, k := range keys {
		fmt.Fprintf(h, "\x00%s\x00%s", k, args[k].String())
	}
	return hex.EncodeToString(h.Sum(nil))[:32]
}

func (g *gateway) audit(t *turnState, record agp.TurnPermissionAuditEvent) error {
	return g.send(t, agp.NotificationTurnPermissionAudit, "TurnPermissionAuditEvent", func(seq int64) any {
		record.ThreadID, record.TurnID, record.Sequence, record.AuditID, record.RecordedAt = t.threadID, t.id, seq, newID("audit_"), now()
		return record
	}, func(n any) error {
		return g.conn.NotifyTurnPermissionAudit(context.Background(), n.(agp.TurnPermissionAuditEvent))
	})
}

// permitted decides whether a tool call may run: allowed outright, by a grant of this turn,
// or by the client's answer to an approval request opened here, before the tool's item starts.
func (g *gateway) permitted(t *turnState, tool string, action agp.PermissionActionKind, args map[string]jsonrpc.Value, summary string) bool {
	snapshot := t.snapshot()
	behavior := behaviorOf(snapshot.PermissionProfile.EffectivePolicy, action)
	scope := scopeHash(tool, args)
	decided := func(kind agp.TurnPermissionAuditEventKind, by agp.TurnPermissionAuditEventDecidedBy) {
		_ = g.audit(t, agp.TurnPermissionAuditEvent{Kind: kind, ToolName: ptr(tool), Action: ptr(action), Behavior: ptr(behavior), DecidedBy: ptr(by), ScopeHash: ptr(scope)})
	}
	switch behavior {
	case agp.PermissionBehaviorAllow:
		return true
	case agp.PermissionBehaviorDeny:
		decided(agp.TurnPermissionAuditEventKindDecisionDenied, agp.TurnPermissionAuditEventDecidedByPolicy)
		return false
	}
	t.mu.Lock()
	granted := t.grants[scope]
	t.mu.Unlock()
	if granted {
		decided(agp.TurnPermissionAuditEventKindDecisionAllowed, agp.TurnPermissionAuditEventDecidedByTurnGrant)
		return true
	}
	details := map[string]jsonrpc.Value{"arguments": jsonrpc.WriteMap(args, jsonrpc.WriteValue)}
	p := &pendingRequest{
		request: agp.TurnPermissionApprovalRequest{
			RequestID:     newID("perm_"),
			WorkspaceID:   *snapshot.WorkspaceID,
			ThreadID:      t.threadID,
			TurnID:        t.id,
			ToolName:      tool,
			Action:        action,
			ScopeHash:     scope,
			Reason:        fmt.Sprintf("the %s profile asks before %s", snapshot.PermissionProfile.Mode, strings.ReplaceAll(string(action), "_", " ")),
			Summary:       ptr(summary),
			Details:       details,
			AllowedScopes: []agp.TurnPermissionApprovalScope{agp.TurnPermissionApprovalScopeAllowOnce, agp.TurnPermissionApprovalScopeAllowForTurn},
			CreatedAt:     now(),
			ResolveToken:  ptr(newID("")),
		},
		turn:     t,
		answered: make(chan agp.TurnPermissionApprovalResolution, 1),
	}
	g.mu.Lock()
	g.requests[p.request.RequestID] = p
	g.mu.Unlock()
	t.mu.Lock()
	if t.ended {
		t.mu.Unlock()
		return false
	}
	t.pending[p] = true
	t.mu.Unlock()
	_ = g.send(t, agp.NotificationTurnPermissionRequestOpened, "TurnPermissionRequestOpenedNotification", func(seq int64) any {
		return agp.TurnPermissionRequestOpenedNotification{ThreadID: t.threadID, TurnID: t.id, Sequence: seq, Request: p.request}
	}, func(n any) error {
		return g.conn.NotifyTurnPermissionRequestOpened(context.Background(), n.(agp.TurnPermissionRequestOpenedNotification))
	})
	_ = g.audit(t, agp.TurnPermissionAuditEvent{Kind: agp.TurnPermissionAuditEventKindRequestOpened, RequestID: ptr(p.request.RequestID), ToolName: ptr(tool), Action: ptr(action), Behavior: ptr(behavior), ScopeHash: ptr(scope), Reason: ptr(p.request.Reason)})
	var resolution agp.TurnPermissionApprovalResolution
	select {
	case resolution = <-p.answered:
	case <-t.ctx.Done():
		return false
	}
	t.mu.Lock()
	delete(t.pending, p)
	t.mu.Unlock()
	return resolution == agp.TurnPermissionApprovalResolutionAllowOnce || resolution == agp.TurnPermissionApprovalResolutionAllowForTurn
}

// resolve resolves a request once: the resolved notification and its audit record, then the
// waiting tool call goes on. It reports whether this call resolved it.
func (g *gateway) resolve(p *pendingRequest, resolution agp.TurnPermissionApprovalResolution) bool {
	t := p.turn
	t.mu.Lock()
	if p.resolution != "" {
		t.mu.Unlock()
		return false
	}
	p.resolution, p.resolvedAt = resolution, now()
	if resolution == agp.TurnPermissionApprovalResolutionAllowForTurn {
		t.grants[p.request.ScopeHash] = true
	}
	delete(t.pending, p)
	t.mu.Unlock()
	request := p.request
	_ = g.send(t, agp.NotificationTurnPermissionRequestResolved, "TurnPermissionRequestResolvedNotification", func(seq int64) any {
		return agp.TurnPermissionRequestResolvedNotification{ThreadID: t.threadID, TurnID: t.id, Sequence: seq, RequestID: request.RequestID, Resolution: resolution, ResolvedAt: p.resolvedAt, ScopeHash: ptr(request.ScopeHash)}
	}, func(n any) error {
		return g.conn.NotifyTurnPermissionRequestResolved(context.Background(), n.(agp.TurnPermissionRequestResolvedNotification))
	})
	_ = g.audit(t, agp.TurnPermissionAuditEvent{Kind: agp.TurnPermissionAuditEventKindRequestResolved, RequestID: ptr(request.RequestID), ToolName: ptr(request.ToolName), Action: ptr(request.Action), DecidedBy: ptr(agp.TurnPermissionAuditEventDecidedByResolution), Resolution: ptr(resolution), ScopeHash: ptr(request.ScopeHash)})
	p.answered <- resolution
	return true
}

func (g *gateway) TurnPermissionRequestRespond(_ context.Context, params agp.TurnPermissionRequestRespondParams) (agp.TurnPermissionRequestRespondResponse, error) {
	id := jsonrpc.Member{Key: "request_id", Value: jsonrpc.StringValue(params.RequestID)}
	g.mu.Lock()
	p, ok := g.requests[params.RequestID]
	g.mu.Unlock()
	if !ok {
		return agp.TurnPermissionRequestRespondResponse{}, agp.ProtocolError(agp.ReasonPermissionRequestNotFound, "no approval request "+params.RequestID, id)
	}
	p.turn.mu.Lock()
	earlier := p.resolution
	p.turn.mu.Unlock()
	if earlier != "" {
		return agp.TurnPermissionRequestRespondResponse{}, agp.ProtocolError(agp.ReasonPermissionRequestResolved, fmt.Sprintf("approval request %s was already resolved %s", params.RequestID, earlier), id, jsonrpc.Member{Key: "resolution", Value: jsonrpc.StringValue(string(earlier))})
	}
	if params.ResolveToken != nil && *params.ResolveToken != *p.request.ResolveToken {
		return agp.TurnPermissionRequestRespondResponse{}, agp.ProtocolError(agp.ReasonUnauthorized, "the resolve_token does not belong to approval request "+params.RequestID, id)
	}
	resolution := agp.TurnPermissionApprovalResolution(params.Resolution)
	if !g.resolve(p, resolution) {
		return agp.TurnPermissionRequestRespondResponse{}, agp.ProtocolError(agp.ReasonPermissionRequestResolved, "approval request "+params.RequestID+" was already resolved", id)
	}
	return agp.TurnPermissionRequestRespondResponse{RequestID: params.RequestID, ThreadID: p.request.ThreadID, TurnID: p.request.TurnID, Resolution: resolution, ResolvedAt: p.resolvedAt}, nil
}

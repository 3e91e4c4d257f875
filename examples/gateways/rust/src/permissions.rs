//! Permissions: each permission mode's policy, the decision on each tool call (allowed, by a
//! grant of the turn, or by the client's answer to an approval request opened before the
//! tool's item starts), and the answers to those requests.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex};

use agent_gateway::types::{
    PermissionActionKind, PermissionBehavior, ToolPermissionPolicySnapshot,
    TurnPermissionApprovalRequest, TurnPermissionApprovalResolution, TurnPermissionApprovalScope,
    TurnPermissionAuditEvent, TurnPermissionAuditEventDecidedBy, TurnPermissionAuditEventKind,
    TurnPermissionMode, TurnPermissionRequestOpenedNotification,
    TurnPermissionRequestResolvedNotification, TurnPermissionRequestRespondParams,
    TurnPermissionRequestRespondParamsResolution as Answer, TurnPermissionRequestRespondResponse,
};
use agent_gateway::{ErrorReason, RpcError, ServerConnection};
use tokio::sync::oneshot;

use crate::gateway::{refusal, Shared};
use crate::stamps::{new_id, now};
use crate::turn::Run;

use PermissionBehavior::{Allow, Ask, Deny};

fn policy(
    read: PermissionBehavior,
    write: PermissionBehavior,
    shell: PermissionBehavior,
    network: PermissionBehavior,
) -> ToolPermissionPolicySnapshot {
    ToolPermissionPolicySnapshot {
        default_behavior: Ask,
        file_read: read,
        file_write: write,
        shell_command: shell,
        network,
        mcp_read: Ask,
        mcp_write_or_unknown: Ask,
        dynamic_skill_tool: Deny,
        computer_use: Deny,
        task_subagent: Deny,
        allowed_tools: None,
        denied_tools: None,
        allowed_paths: None,
        extra: Default::default(),
    }
}

/// The effective policy of a permission mode: full_access allows everything; supervised
/// allows file reads and asks before file writes, shell commands and the network;
/// auto_accept_edits allows writes too.
pub fn policy_of(mode: TurnPermissionMode) -> ToolPermissionPolicySnapshot {
    match mode {
        TurnPermissionMode::FullAccess => ToolPermissionPolicySnapshot {
            default_behavior: Allow,
            mcp_read: Allow,
            mcp_write_or_unknown: Allow,
            dynamic_skill_tool: Allow,
            computer_use: Allow,
            task_subagent: Allow,
            ..policy(Allow, Allow, Allow, Allow)
        },
        TurnPermissionMode::AutoAcceptEdits => policy(Allow, Allow, Ask, Ask),
        TurnPermissionMode::Supervised => policy(Allow, Ask, Ask, Ask),
    }
}

fn behavior_of(
    policy: &ToolPermissionPolicySnapshot,
    action: PermissionActionKind,
) -> PermissionBehavior {
    match action {
        PermissionActionKind::FileRead => policy.file_read,
        PermissionActionKind::FileWrite => policy.file_write,
        PermissionActionKind::ShellCommand => policy.shell_command,
        PermissionActionKind::Network => policy.network,
        _ => policy.default_behavior,
    }
}

/// The name of an action as the wire writes it (`shell_command`), read as words.
fn action_words(action: PermissionActionKind) -> String {
    serde_json::to_value(action)
        .ok()
        .and_then(|v| v.as_str().map(|s| s.replace('_', " ")))
        .unwrap_or_default()
}

fn mode_name(mode: TurnPermissionMode) -> String {
    serde_json::to_value(mode)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// An approval request the client has to answer.
pub struct PendingRequest {
    pub request: TurnPermissionApprovalRequest,
    pub turn: Arc<crate::turn::TurnState>,
    /// How and when it was resolved, once it is.
    decided: Mutex<Option<(TurnPermissionApprovalResolution, String)>>,
    answered: Mutex<Option<oneshot::Sender<TurnPermissionApprovalResolution>>>,
}

impl PendingRequest {
    fn decided(&self) -> Option<(TurnPermissionApprovalResolution, String)> {
        self.decided.lock().expect("never poisoned").clone()
    }
}

/// What an approval covers: the tool and its arguments.
fn scope_hash(tool: &str, args: &serde_json::Map<String, serde_json::Value>) -> String {
    let mut hasher = DefaultHasher::new();
    tool.hash(&mut hasher);
    for (name, value) in args {
        name.hash(&mut hasher);
        value.to_string().hash(&mut hasher);
    }
    format!("{:016x}", hasher.finish())
}

impl Run {
    fn audit(&self, record: TurnPermissionAuditEvent) {
        let _ = self.send(
            "turn/permission/audit",
            |sequence, _| TurnPermissionAuditEvent {
                thread_id: self.turn.thread_id.clone(),
                turn_id: self.turn.id.clone(),
                sequence,
                audit_id: new_id("audit_"),
                recorded_at: now(),
                ..record
            },
            ServerConnection::notify_turn_permission_audit,
        );
    }

    /// Whether a tool call may run: allowed outright, by a grant of this turn, or by the
    /// client's answer to an approval request opened here.
    pub async fn permitted(
        &self,
        tool: &str,
        action: PermissionActionKind,
        args: &serde_json::Map<String, serde_json::Value>,
        summary: &str,
    ) -> bool {
        let snapshot = self.turn.snapshot();
        let behavior = behavior_of(&snapshot.permission_profile.effective_policy, action);
        let scope = scope_hash(tool, args);
        let record = |kind: TurnPermissionAuditEventKind| TurnPermissionAuditEvent {
            kind,
            tool_name: Some(tool.to_owned()),
            action: Some(action),
            behavior: Some(behavior),
            scope_hash: Some(scope.clone()),
            ..empty_audit()
        };
        match behavior {
            Allow => return true,
            Deny => {
                self.audit(TurnPermissionAuditEvent {
                    decided_by: Some(TurnPermissionAuditEventDecidedBy::Policy),
                    ..record(TurnPermissionAuditEventKind::DecisionDenied)
                });
                return false;
            }
            Ask => {}
        }
        if self.turn.lock().grants.contains(&scope) {
            self.audit(TurnPermissionAuditEvent {
                decided_by: Some(TurnPermissionAuditEventDecidedBy::TurnGrant),
                ..record(TurnPermissionAuditEventKind::DecisionAllowed)
            });
            return true;
        }
        let request = TurnPermissionApprovalRequest {
            request_id: new_id("perm_"),
            workspace_id: snapshot.workspace_id.clone().unwrap_or_default(),
            thread_id: self.turn.thread_id.clone(),
            turn_id: self.turn.id.clone(),
            visible_thread_ids: None,
            tool_name: tool.to_owned(),
            action,
            scope_hash: scope.clone(),
            reason: format!(
                "the {} profile asks before {}",
                mode_name(snapshot.permission_profile.mode),
                action_words(action)
            ),
            title: None,
            args_json: None,
            override_reason: None,
            preview: None,
            summary: Some(summary.to_owned()),
            details: serde_json::Map::from_iter([(
                "arguments".to_owned(),
                serde_json::Value::Object(args.clone()),
            )]),
            allowed_scopes: vec![
                TurnPermissionApprovalScope::AllowOnce,
                TurnPermissionApprovalScope::AllowForTurn,
            ],
            outside_paths: None,
            sandbox_escape: None,
            item_id: None,
            created_at: now(),
            expires_at: None,
            resolve_token: Some(new_id("")),
            extra: Default::default(),
        };
        let (answered, answer) = oneshot::channel();
        let pending = Arc::new(PendingRequest {
            request: request.clone(),
            turn: Arc::clone(&self.turn),
            decided: Mutex::new(None),
            answered: Mutex::new(Some(answered)),
        });
        {
            let mut inner = self.turn.lock();
            if inner.ended {
                return false;
            }
            inner.pending.push(request.request_id.clone());
        }
        self.shared
            .state()
            .requests
            .insert(request.request_id.clone(), Arc::clone(&pending));
        let _ = self.send(
            "turn/permission/request/opened",
            |sequence, _| TurnPermissionRequestOpenedNotification {
                thread_id: self.turn.thread_id.clone(),
                turn_id: self.turn.id.clone(),
                sequence,
                request: request.clone(),
                extra: Default::default(),
            },
            ServerConnection::notify_turn_permission_request_opened,
        );
        self.audit(TurnPermissionAuditEvent {
            request_id: Some(request.request_id.clone()),
            reason: Some(request.reason.clone()),
            ..record(TurnPermissionAuditEventKind::RequestOpened)
        });
        let resolution = tokio::select! {
            resolution = answer => resolution.unwrap_or(TurnPermissionApprovalResolution::Cancelled),
            () = self.turn.cancelled() => return false,
        };
        matches!(
            resolution,
            TurnPermissionApprovalResolution::AllowOnce
                | TurnPermissionApprovalResolution::AllowForTurn
        )
    }
}

fn empty_audit() -> TurnPermissionAuditEvent {
    TurnPermissionAuditEvent {
        thread_id: String::new(),
        turn_id: String::new(),
        sequence: 0,
        audit_id: String::new(),
        kind: TurnPermissionAuditEventKind::RequestOpened,
        request_id: None,
        tool_name: None,
        action: None,
        behavior: None,
        decided_by: None,
        reason: None,
        scope_hash: None,
        resolution: None,
        profile: None,
        recorded_at: String::new(),
        extra: Default::default(),
    }
}

/// Resolves a request once: the resolved notification and its audit record, then the waiting
/// tool call goes on. Reports whether this call resolved it.
pub fn resolve(
    run: &Run,
    pending: &PendingRequest,
    resolution: TurnPermissionApprovalResolution,
) -> bool {
    let resolved_at = {
        let mut decided = pending.decided.lock().expect("never poisoned");
        if decided.is_some() {
            return false;
        }
        let at = now();
        *decided = Some((resolution, at.clone()));
        at
    };
    let request = &pending.request;
    {
        let mut inner = run.turn.lock();
        if resolution == TurnPermissionApprovalResolution::AllowForTurn {
            inner.grants.insert(request.scope_hash.clone());
        }
        inner.pending.retain(|id| id != &request.request_id);
    }
    let _ = run.send(
        "turn/permission/request/resolved",
        |sequence, _| TurnPermissionRequestResolvedNotification {
            thread_id: run.turn.thread_id.clone(),
            turn_id: run.turn.id.clone(),
            sequence,
            request_id: request.request_id.clone(),
            resolution,
            resolved_at: resolved_at.clone(),
            scope_hash: Some(request.scope_hash.clone()),
            extra: Default::default(),
        },
        ServerConnection::notify_turn_permission_request_resolved,
    );
    run.audit(TurnPermissionAuditEvent {
        kind: TurnPermissionAuditEventKind::RequestResolved,
        request_id: Some(request.request_id.clone()),
        tool_name: Some(request.tool_name.clone()),
        action: Some(request.action),
        decided_by: Some(TurnPermissionAuditEventDecidedBy::Resolution),
        resolution: Some(resolution),
        scope_hash: Some(request.scope_hash.clone()),
        ..empty_audit()
    });
    if let Some(answered) = pending.answered.lock().expect("never poisoned").take() {
        let _ = answered.send(resolution);
    }
    true
}

/// turn/permission/request/respond: the client's answer to an approval request.
pub fn respond(
    shared: &Arc<Shared>,
    peer: &ServerConnection,
    params: TurnPermissionRequestRespondParams,
) -> Result<TurnPermissionRequestRespondResponse, RpcError> {
    let id = || {
        (
            "request_id",
            serde_json::Value::from(params.request_id.clone()),
        )
    };
    let pending = shared.state().requests.get(&params.request_id).cloned();
    let Some(pending) = pending else {
        return Err(refusal(
            ErrorReason::PermissionRequestNotFound,
            format!("no approval request {}", params.request_id),
            [id()],
        ));
    };
    if let Some((earlier, _)) = pending.decided() {
        let earlier = serde_json::to_value(earlier).unwrap_or_default();
        return Err(refusal(
            ErrorReason::PermissionRequestResolved,
            format!(
                "approval request {} was already resolved {}",
                params.request_id,
                earlier.as_str().unwrap_or_default()
            ),
            [id(), ("resolution", earlier)],
        ));
    }
    if params.resolve_token.is_some() && params.resolve_token != pending.request.resolve_token {
        return Err(refusal(
            ErrorReason::Unauthorized,
            format!(
                "the resolve_token does not belong to approval request {}",
                params.request_id
            ),
            [id()],
        ));
    }
    let resolution = match params.resolution {
        Answer::AllowOnce => TurnPermissionApprovalResolution::AllowOnce,
        Answer::AllowForTurn => TurnPermissionApprovalResolution::AllowForTurn,
        Answer::Deny => TurnPermissionApprovalResolution::Deny,
    };
    let run = Run {
        shared: Arc::clone(shared),
        peer: peer.clone(),
        turn: Arc::clone(&pending.turn),
    };
    if !resolve(&run, &pending, resolution) {
        return Err(refusal(
            ErrorReason::PermissionRequestResolved,
            format!(
                "approval request {} was already resolved",
                params.request_id
            ),
            [id()],
        ));
    }
    let (_, resolved_at) = pending.decided().unwrap_or((resolution, now()));
    Ok(TurnPermissionRequestRespondResponse {
        request_id: params.request_id,
        thread_id: pending.request.thread_id.clone(),
        turn_id: pending.request.turn_id.clone(),
        resolution,
        resolved_at,
        extra: Default::default(),
    })
}

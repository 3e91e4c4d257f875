//! The gateway's handlers: threads, turns and approvals of the one connection it serves.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};

use agent_gateway::jsonrpc::after_reply;
use agent_gateway::types::{
    AgentDelegationRouteCreateParams, AgentDelegationRouteListParams,
    AgentDelegationRouteListResponse, AgentDelegationRouteProjection,
    AgentDelegationRouteRevokeParams, Thread, ThreadGetParams, ThreadGetResponse,
    ThreadStartParams, ThreadStartResponse, ThreadTimelineBlock, ThreadTimelinePageParams,
    ThreadTimelinePageResponse, ThreadTimelinePageResponsePage, Turn, TurnCancelParams,
    TurnCancelResponse, TurnCapabilityResolution, TurnCapabilityResolutionReason,
    TurnCapabilityResolutionStatus, TurnFailureKind, TurnGetParams, TurnGetResponse,
    TurnItemsParams, TurnItemsResponse, TurnMode, TurnPermissionMode,
    TurnPermissionProfileSnapshot, TurnPermissionProfileSource, TurnPermissionRequestRespondParams,
    TurnPermissionRequestRespondResponse, TurnQuestionRespondParams, TurnQuestionRespondResponse,
    TurnResumeParams, TurnResumeResponse, TurnStartParams, TurnStartResponse, TurnStatus,
    TurnWorkItemsGetParams, TurnWorkItemsGetResponse, TurnWorkPageParams, TurnWorkPageResponse,
    UserInput,
};
use agent_gateway::{ErrorReason, RpcError, ServerConnection, ServerHandler};

use crate::model::Provider;
use crate::permissions::{policy_of, PendingRequest};
use crate::stamps::{new_id, now, now_micros};
use crate::turn::{failure, Outcome, Run, TurnState};

/// Everything the gateway holds, in memory.
pub struct State {
    pub threads: HashMap<String, ThreadState>,
    pub turn_ids: HashSet<String>,
    pub requests: HashMap<String, Arc<PendingRequest>>,
}

pub struct ThreadState {
    pub thread: Thread,
    pub turns: Vec<Arc<TurnState>>,
}

/// What the handlers and the running turns share.
pub struct Shared {
    pub provider: Provider,
    pub model: String,
    state: Mutex<State>,
}

impl Shared {
    /// The state, locked; never held across an await.
    pub fn state(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .expect("the gateway's lock is never poisoned")
    }
}

/// The gateway: the generated server's handler.
pub struct Gateway {
    shared: Arc<Shared>,
}

impl Gateway {
    pub fn new(provider: Provider, model: String) -> Gateway {
        let state = State {
            threads: HashMap::new(),
            turn_ids: HashSet::new(),
            requests: HashMap::new(),
        };
        Gateway {
            shared: Arc::new(Shared {
                provider,
                model,
                state: Mutex::new(state),
            }),
        }
    }

    fn thread(&self, id: &str) -> Result<Thread, RpcError> {
        let state = self.shared.state();
        let thread = state.threads.get(id).ok_or_else(|| thread_not_found(id))?;
        Ok(thread.thread.clone())
    }

    fn turn(&self, thread_id: &str, turn_id: &str) -> Result<Arc<TurnState>, RpcError> {
        let state = self.shared.state();
        let thread = state
            .threads
            .get(thread_id)
            .ok_or_else(|| thread_not_found(thread_id))?;
        thread
            .turns
            .iter()
            .find(|t| t.id == turn_id)
            .cloned()
            .ok_or_else(|| {
                refusal(
                    ErrorReason::TurnNotFound,
                    format!("thread {thread_id} has no turn {turn_id}"),
                    [("thread_id", thread_id.into()), ("turn_id", turn_id.into())],
                )
            })
    }

    /// Registers a new turn of the thread and marks it active; it has not started running.
    fn admit(&self, params: &TurnStartParams) -> Result<Arc<TurnState>, RpcError> {
        let mut state = self.shared.state();
        if state.turn_ids.contains(&params.turn_id) {
            return Err(refusal(
                ErrorReason::DuplicateTurnId,
                format!("turn id {} is already used", params.turn_id),
                [("turn_id", params.turn_id.clone().into())],
            ));
        }
        let thread = state
            .threads
            .get_mut(&params.thread_id)
            .ok_or_else(|| thread_not_found(&params.thread_id))?;
        if let Some(active) = &thread.thread.active_turn_id {
            return Err(refusal(
                ErrorReason::TurnInProgress,
                format!("thread {} is running turn {active}", thread.thread.id),
                [("active_turn_id", active.clone().into())],
            ));
        }
        let selection = params.permission_profile.as_ref();
        let mode = selection
            .and_then(|p| p.mode)
            .unwrap_or(TurnPermissionMode::FullAccess);
        let source = if selection.is_some() {
            TurnPermissionProfileSource::Composer
        } else {
            TurnPermissionProfileSource::Defaulted
        };
        let profile = TurnPermissionProfileSnapshot::new(mode, source, policy_of(mode));
        let turn = Turn {
            thread_id: Some(thread.thread.id.clone()),
            workspace_id: Some(thread.thread.workspace_id.clone()),
            mode: Some(params.mode.unwrap_or(thread.thread.mode)),
            model: Some(
                params
                    .model
                    .clone()
                    .or_else(|| thread.thread.model.clone())
                    .unwrap_or_else(|| self.shared.model.clone()),
            ),
            created_at: Some(now()),
            // It has no skills, MCP servers or tools beyond the three: every capability asked for is not found.
            capabilities: params.capabilities.as_ref().map(|asked| {
                asked
                    .iter()
                    .map(|c| TurnCapabilityResolution {
                        capability_id: c.id.clone(),
                        status: TurnCapabilityResolutionStatus::Rejected,
                        reason: TurnCapabilityResolutionReason::NotFound,
                        message: None,
                        extra: Default::default(),
                    })
                    .collect()
            }),
            ..Turn::new(
                params.turn_id.clone(),
                TurnStatus::InProgress,
                None,
                profile,
            )
        };
        let created = TurnState::new(
            turn,
            thread.thread.id.clone(),
            params.input.clone(),
            now_micros(),
        );
        let created = Arc::new(created);
        thread.turns.push(Arc::clone(&created));
        thread.thread.active_turn_id = Some(created.id.clone());
        state.turn_ids.insert(created.id.clone());
        Ok(created)
    }
}

/// An error of a registered reason, with members of `data` beside the reason.
pub fn refusal<const N: usize>(
    reason: ErrorReason,
    message: String,
    data: [(&str, serde_json::Value); N],
) -> RpcError {
    reason
        .error(message)
        .with_data(data.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())
}

fn thread_not_found(id: &str) -> RpcError {
    refusal(
        ErrorReason::ThreadNotFound,
        format!("no thread {id}"),
        [("thread_id", id.into())],
    )
}

/// Refuses a field this gateway does not serve, naming it: a field accepted and ignored would
/// mislead the client.
fn invalid_params(message: String, field: &str) -> RpcError {
    refusal(
        ErrorReason::InvalidParams,
        message,
        [("field", field.into())],
    )
}

fn not_served(method: &str) -> RpcError {
    ErrorReason::MethodNotFound.error(format!("{method} is not served by this gateway"))
}

/// Refuses what this gateway does not serve in a turn/start, naming it.
fn refuse_unserved(params: &TurnStartParams) -> Result<(), RpcError> {
    if let Some(backend) = &params.execution_backend {
        return Err(refusal(
            ErrorReason::ExecutionBackendUnavailable,
            "this gateway serves only its own model provider".to_owned(),
            [(
                "execution_backend",
                serde_json::to_value(backend).unwrap_or_default(),
            )],
        ));
    }
    let unserved = [
        ("model_provider", params.model_provider.is_some()),
        ("cli_runtime_options", params.cli_runtime_options.is_some()),
        ("sandbox_policy", params.sandbox_policy.is_some()),
    ];
    if let Some((field, _)) = unserved.iter().find(|(_, given)| *given) {
        return Err(invalid_params(
            format!("turn/start: {field} is not served by this gateway"),
            field,
        ));
    }
    if let Some(profile) = &params.permission_profile {
        let unserved = [
            ("allowed_tools", profile.allowed_tools.is_some()),
            ("denied_tools", profile.denied_tools.is_some()),
            ("allowed_paths", profile.allowed_paths.is_some()),
        ];
        if let Some((field, _)) = unserved.iter().find(|(_, given)| *given) {
            let field = format!("permission_profile.{field}");
            return Err(invalid_params(
                format!("turn/start: {field} is not served by this gateway"),
                &field,
            ));
        }
    }
    if let Some(i) = params
        .input
        .iter()
        .position(|input| !matches!(input, UserInput::Text(_)))
    {
        return Err(invalid_params(
            format!("turn/start: input/{i} is not text; this gateway takes text input only"),
            "input",
        ));
    }
    Ok(())
}

fn status_name(status: TurnStatus) -> String {
    serde_json::to_value(status)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

impl ServerHandler for Gateway {
    async fn thread_start(
        &self,
        params: ThreadStartParams,
        _peer: &ServerConnection,
    ) -> Result<ThreadStartResponse, RpcError> {
        if params.model_provider.is_some() {
            return Err(invalid_params(
                "thread/start: model_provider is not served by this gateway".to_owned(),
                "model_provider",
            ));
        }
        let cwd = match params.cwd {
            Some(cwd) => cwd,
            None => std::env::current_dir()
                .map(|d| d.display().to_string())
                .unwrap_or_default(),
        };
        let thread = Thread {
            id: new_id("thr_"),
            workspace_id: params.workspace_id.unwrap_or_else(|| "ws_rust".to_owned()),
            cwd,
            model_provider: None,
            model: params.model,
            mode: params.mode.unwrap_or(TurnMode::Chat),
            created_at: now(),
            active_turn_id: None,
            extra: Default::default(),
        };
        let stored = ThreadState {
            thread: thread.clone(),
            turns: Vec::new(),
        };
        self.shared
            .state()
            .threads
            .insert(thread.id.clone(), stored);
        Ok(ThreadStartResponse {
            thread,
            extra: Default::default(),
        })
    }

    async fn thread_get(
        &self,
        params: ThreadGetParams,
        _peer: &ServerConnection,
    ) -> Result<ThreadGetResponse, RpcError> {
        Ok(ThreadGetResponse {
            thread: self.thread(&params.thread_id)?,
            extra: Default::default(),
        })
    }

    async fn thread_timeline_page(
        &self,
        params: ThreadTimelinePageParams,
        _peer: &ServerConnection,
    ) -> Result<ThreadTimelinePageResponse, RpcError> {
        if params.cursor.is_some() {
            return Err(invalid_params(
                "thread/timeline/page: this gateway gives out no cursors".to_owned(),
                "cursor",
            ));
        }
        let turns = {
            let state = self.shared.state();
            let thread = state
                .threads
                .get(&params.thread_id)
                .ok_or_else(|| thread_not_found(&params.thread_id))?;
            thread.turns.clone()
        };
        let blocks: Vec<ThreadTimelineBlock> = turns
            .iter()
            .map(|t| ThreadTimelineBlock {
                user_text: Some(t.text.clone()),
                ..ThreadTimelineBlock::new(
                    format!("blk:{}", t.id),
                    "turn_work".to_owned(),
                    t.id.clone(),
                    t.snapshot().status,
                    t.created_micros,
                )
            })
            .collect();
        let total = blocks.len();
        let limit = params
            .limit
            .and_then(|l| usize::try_from(l).ok())
            .unwrap_or(total);
        let page: Vec<ThreadTimelineBlock> = blocks.into_iter().take(limit).collect();
        let has_more = page.len() < total;
        Ok(ThreadTimelinePageResponse {
            thread_id: params.thread_id,
            blocks: page,
            page: ThreadTimelinePageResponsePage {
                next_cursor: None,
                has_more,
                extra: Default::default(),
            },
            extra: Default::default(),
        })
    }

    async fn turn_start(
        &self,
        params: TurnStartParams,
        peer: &ServerConnection,
    ) -> Result<TurnStartResponse, RpcError> {
        self.thread(&params.thread_id)?;
        refuse_unserved(&params)?;
        let turn = self.admit(&params)?;
        let run = Run {
            shared: Arc::clone(&self.shared),
            peer: peer.clone(),
            turn: Arc::clone(&turn),
        };
        // The turn runs once the response is on its way: nothing of it comes before turn/start's result.
        after_reply(run.run());
        Ok(TurnStartResponse {
            turn: turn.snapshot(),
            extra: Default::default(),
        })
    }

    async fn turn_cancel(
        &self,
        params: TurnCancelParams,
        peer: &ServerConnection,
    ) -> Result<TurnCancelResponse, RpcError> {
        let turn = self.turn(&params.thread_id, &params.turn_id)?;
        if turn.has_ended() {
            let status = status_name(turn.snapshot().status);
            return Err(refusal(
                ErrorReason::TurnNotActive,
                format!("turn {} already ended {status}", turn.id),
                [
                    ("turn_id", turn.id.clone().into()),
                    ("status", status.into()),
                ],
            ));
        }
        let message = params
            .reason
            .unwrap_or_else(|| "cancelled by the client".to_owned());
        let run = Run {
            shared: Arc::clone(&self.shared),
            peer: peer.clone(),
            turn: Arc::clone(&turn),
        };
        run.finish(Outcome::Failed(
            failure(TurnFailureKind::Cancelled, message),
            TurnStatus::Interrupted,
        ));
        Ok(TurnCancelResponse {
            turn: turn.snapshot(),
            extra: Default::default(),
        })
    }

    /// No turn of this gateway ever blocks.
    async fn turn_resume(
        &self,
        params: TurnResumeParams,
        _peer: &ServerConnection,
    ) -> Result<TurnResumeResponse, RpcError> {
        let turn = self.turn(&params.thread_id, &params.turn_id)?;
        let status = status_name(turn.snapshot().status);
        Err(refusal(
            ErrorReason::TurnNotBlocked,
            format!("turn {} is {status}, not Blocked", turn.id),
            [
                ("turn_id", turn.id.clone().into()),
                ("status", status.into()),
            ],
        ))
    }

    async fn turn_get(
        &self,
        params: TurnGetParams,
        _peer: &ServerConnection,
    ) -> Result<TurnGetResponse, RpcError> {
        let turn = self.turn(&params.thread_id, &params.turn_id)?;
        Ok(TurnGetResponse {
            turn: turn.snapshot(),
            extra: Default::default(),
        })
    }

    async fn turn_items(
        &self,
        params: TurnItemsParams,
        _peer: &ServerConnection,
    ) -> Result<TurnItemsResponse, RpcError> {
        let turn = self.turn(&params.thread_id, &params.turn_id)?;
        let after = params.after_sequence.unwrap_or(0);
        let limit = params
            .limit
            .and_then(|l| usize::try_from(l).ok())
            .unwrap_or(usize::MAX);
        let inner = turn.lock();
        let events: Vec<_> = inner
            .events
            .iter()
            .filter(|e| e.sequence > after)
            .take(limit)
            .cloned()
            .collect();
        let last_sequence = events.last().map_or(after, |e| e.sequence);
        Ok(TurnItemsResponse {
            thread_id: turn.thread_id.clone(),
            workspace_id: inner.turn.workspace_id.clone().unwrap_or_default(),
            turn_id: turn.id.clone(),
            events,
            last_sequence,
            extra: Default::default(),
        })
    }

    async fn turn_permission_request_respond(
        &self,
        params: TurnPermissionRequestRespondParams,
        peer: &ServerConnection,
    ) -> Result<TurnPermissionRequestRespondResponse, RpcError> {
        crate::permissions::respond(&self.shared, peer, params)
    }

    // The methods of the capabilities this gateway does not claim: work, questions, routes.

    async fn turn_work_page(
        &self,
        _params: TurnWorkPageParams,
        _peer: &ServerConnection,
    ) -> Result<TurnWorkPageResponse, RpcError> {
        Err(not_served("turn/work/page"))
    }

    async fn turn_work_items_get(
        &self,
        _params: TurnWorkItemsGetParams,
        _peer: &ServerConnection,
    ) -> Result<TurnWorkItemsGetResponse, RpcError> {
        Err(not_served("turn/work/items/get"))
    }

    async fn turn_question_respond(
        &self,
        _params: TurnQuestionRespondParams,
        _peer: &ServerConnection,
    ) -> Result<TurnQuestionRespondResponse, RpcError> {
        Err(not_served("turn/question/respond"))
    }

    async fn agent_route_create(
        &self,
        _params: AgentDelegationRouteCreateParams,
        _peer: &ServerConnection,
    ) -> Result<AgentDelegationRouteProjection, RpcError> {
        Err(not_served("agent/route/create"))
    }

    async fn agent_route_list(
        &self,
        _params: AgentDelegationRouteListParams,
        _peer: &ServerConnection,
    ) -> Result<AgentDelegationRouteListResponse, RpcError> {
        Err(not_served("agent/route/list"))
    }

    async fn agent_route_revoke(
        &self,
        _params: AgentDelegationRouteRevokeParams,
        _peer: &ServerConnection,
    ) -> Result<AgentDelegationRouteProjection, RpcError> {
        Err(not_served("agent/route/revoke"))
    }
}

//! One turn: its state, its notifications (numbered in the order they are sent), and the loop
//! that runs it: the user's message, then model calls (and, in Agent mode, tool calls) until
//! an answer.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, MutexGuard};

use agent_gateway::types::{
    ItemCompletedNotification, ItemDeltaNotification, ItemDeltaStream, ItemStartedNotification,
    ThreadTimelineBlocksChangedNotification, Turn, TurnCompletedNotification,
    TurnFailedNotification, TurnFailure, TurnFailureKind, TurnItem, TurnItemAgentMessage,
    TurnItemEvent, TurnItemReasoning, TurnItemStatus, TurnItemUserMessage, TurnMode,
    TurnPermissionApprovalResolution, TurnStartedNotification, TurnStatus, TurnUsage, UserInput,
};
use agent_gateway::{Error, ServerConnection};
use serde::Serialize;
use tokio::sync::watch;

use crate::gateway::Shared;
use crate::model::{ChatMessage, ProviderError};
use crate::stamps::{new_id, now};

/// What a turn keeps while it runs, under one lock: held while one of its notifications is
/// numbered and sent, so that the order of the sequence numbers is the order on the wire.
pub struct TurnInner {
    pub turn: Turn,
    pub sequence: u64,
    /// The item events sent so far, for turn/items.
    pub events: Vec<TurnItemEvent>,
    pub ended: bool,
    pub answer: String,
    /// The scope hashes granted allow_for_turn: they end with the turn.
    pub grants: HashSet<String>,
    /// The approval requests still open.
    pub pending: Vec<String>,
    /// The items started and not yet completed, in the order they started: the turn's end
    /// completes them before its terminal notification.
    pub open: Vec<(String, TurnItem)>,
}

/// A turn of a thread.
pub struct TurnState {
    pub id: String,
    pub thread_id: String,
    pub text: String,
    pub input: Vec<UserInput>,
    pub created_micros: u64,
    cancelled: watch::Sender<bool>,
    inner: Mutex<TurnInner>,
}

impl TurnState {
    pub fn new(
        turn: Turn,
        thread_id: String,
        input: Vec<UserInput>,
        created_micros: u64,
    ) -> TurnState {
        let text = input
            .iter()
            .filter_map(|i| match i {
                UserInput::Text(text) => Some(text.text.as_str()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n");
        TurnState {
            id: turn.id.clone(),
            thread_id,
            text,
            input,
            created_micros,
            cancelled: watch::channel(false).0,
            inner: Mutex::new(TurnInner {
                turn,
                sequence: 0,
                events: Vec::new(),
                ended: false,
                answer: String::new(),
                grants: HashSet::new(),
                pending: Vec::new(),
                open: Vec::new(),
            }),
        }
    }

    pub fn lock(&self) -> MutexGuard<'_, TurnInner> {
        self.inner.lock().expect("a turn's lock is never poisoned")
    }

    pub fn snapshot(&self) -> Turn {
        self.lock().turn.clone()
    }

    pub fn has_ended(&self) -> bool {
        self.lock().ended
    }

    /// Resolves once the turn is cancelled (or has ended).
    pub async fn cancelled(&self) {
        let mut receiver = self.cancelled.subscribe();
        let _ = receiver.wait_for(|cancelled| *cancelled).await;
    }

    fn cancel(&self) {
        self.cancelled.send_replace(true);
    }
}

/// How a turn ends.
pub enum Outcome {
    /// Completed, with the usage the model reported, if any.
    Completed(Option<TurnUsage>),
    /// Failed or interrupted, with why.
    Failed(TurnFailure, TurnStatus),
}

/// A running turn and what it needs: the gateway's state and the connection it notifies.
#[derive(Clone)]
pub struct Run {
    pub shared: Arc<Shared>,
    pub peer: ServerConnection,
    pub turn: Arc<TurnState>,
}

impl Run {
    /// Numbers one notification of the turn and sends it; an item event is kept for turn/items.
    pub fn send<P: Serialize>(
        &self,
        method: &'static str,
        build: impl FnOnce(u64, &mut TurnInner) -> P,
        notify: impl FnOnce(&ServerConnection, &P) -> Result<(), Error>,
    ) -> Result<(), Error> {
        self.send_if(method, |_| true, build, notify)
    }

    /// Sends as `send` does when `live` says so; the check and the send hold one lock, so
    /// nothing the check refuses (an item the turn's end closed) can follow the turn's end.
    fn send_if<P: Serialize>(
        &self,
        method: &'static str,
        live: impl FnOnce(&mut TurnInner) -> bool,
        build: impl FnOnce(u64, &mut TurnInner) -> P,
        notify: impl FnOnce(&ServerConnection, &P) -> Result<(), Error>,
    ) -> Result<(), Error> {
        let mut inner = self.turn.lock();
        if !live(&mut inner) {
            return Ok(());
        }
        inner.sequence += 1;
        let sequence = inner.sequence;
        let params = build(sequence, &mut inner);
        if method.starts_with("item/") {
            if let Ok(serde_json::Value::Object(params)) = serde_json::to_value(&params) {
                inner.events.push(TurnItemEvent {
                    sequence,
                    method: method.to_owned(),
                    params,
                    recorded_at: now(),
                    extra: Default::default(),
                });
            }
        }
        notify(&self.peer, &params)
    }

    fn turn_started(&self) -> Result<(), Error> {
        self.send(
            "turn/started",
            |sequence, inner| TurnStartedNotification {
                thread_id: self.turn.thread_id.clone(),
                turn_id: self.turn.id.clone(),
                sequence,
                turn: inner.turn.clone(),
                extra: Default::default(),
            },
            ServerConnection::notify_turn_started,
        )
    }

    /// Starts an item; once the turn has ended, nothing is sent.
    pub fn item_started(&self, item: TurnItem) -> Result<(), Error> {
        let id = item_id(&item);
        let opened = item.clone();
        self.send_if(
            "item/started",
            |inner| {
                if inner.ended {
                    return false;
                }
                inner.open.push((id, opened));
                true
            },
            |sequence, _| ItemStartedNotification {
                thread_id: self.turn.thread_id.clone(),
                turn_id: self.turn.id.clone(),
                sequence,
                item_id: item_id(&item),
                item,
                extra: Default::default(),
            },
            ServerConnection::notify_item_started,
        )
    }

    /// Completes an open item; an item the turn's end already completed is left as it is.
    pub fn item_completed(&self, item: TurnItem) -> Result<(), Error> {
        let id = item_id(&item);
        self.completed(item, |inner| {
            match inner.open.iter().position(|(open, _)| *open == id) {
                Some(at) => {
                    inner.open.remove(at);
                    true
                }
                None => false,
            }
        })
    }

    /// Sends an item's completion when `live` says so (see `send_if`).
    fn completed(
        &self,
        item: TurnItem,
        live: impl FnOnce(&mut TurnInner) -> bool,
    ) -> Result<(), Error> {
        self.send_if(
            "item/completed",
            live,
            |sequence, _| ItemCompletedNotification {
                thread_id: self.turn.thread_id.clone(),
                turn_id: self.turn.id.clone(),
                sequence,
                item_id: item_id(&item),
                item,
                extra: Default::default(),
            },
            ServerConnection::notify_item_completed,
        )
    }

    /// A piece of an item's text (agent_message) or of a command's output (stdout, stderr).
    pub fn delta(&self, id: &str, stream: ItemDeltaStream, text: &str) -> Result<(), Error> {
        type Notify = fn(&ServerConnection, &ItemDeltaNotification) -> Result<(), Error>;
        let (method, notify): (&'static str, Notify) = match stream {
            ItemDeltaStream::AgentMessage => (
                "item/agent_message/delta",
                ServerConnection::notify_item_agent_message_delta,
            ),
            _ => (
                "item/command_execution/output_delta",
                ServerConnection::notify_item_command_execution_output_delta,
            ),
        };
        // Only while the item is open: no output follows its completion or the turn's end.
        self.send_if(
            method,
            |inner| inner.open.iter().any(|(open, _)| open == id),
            |sequence, _| ItemDeltaNotification {
                thread_id: self.turn.thread_id.clone(),
                turn_id: self.turn.id.clone(),
                sequence,
                item_id: id.to_owned(),
                stream,
                delta: text.to_owned(),
                extra: Default::default(),
            },
            notify,
        )
    }

    fn timeline_changed(&self) -> Result<(), Error> {
        self.peer
            .notify_thread_timeline_blocks_changed(&ThreadTimelineBlocksChangedNotification {
                thread_id: self.turn.thread_id.clone(),
                changed_block_ids: vec![format!("blk:{}", self.turn.id)],
                turn_id: Some(self.turn.id.clone()),
                extra: Default::default(),
            })
    }

    /// An item's start and completion, nothing between them.
    pub fn item(&self, started: TurnItem, completed: TurnItem) -> Result<(), Error> {
        self.item_started(started)?;
        self.item_completed(completed)
    }

    /// Ends the turn once: open approval requests are resolved cancelled, then its one
    /// terminal notification.
    pub fn finish(&self, outcome: Outcome) {
        let open = {
            let inner = self.turn.lock();
            if inner.ended {
                return;
            }
            inner.pending.clone()
        };
        for request in open {
            let pending = self.shared.state().requests.get(&request).cloned();
            if let Some(pending) = pending {
                crate::permissions::resolve(
                    self,
                    &pending,
                    TurnPermissionApprovalResolution::Cancelled,
                );
            }
        }
        let left = {
            let mut inner = self.turn.lock();
            if inner.ended {
                return;
            }
            inner.ended = true;
            std::mem::take(&mut inner.open)
        };
        self.turn.cancel();
        // Items still open end with the turn, in the order they started: cancelled when it
        // was interrupted, failed otherwise.
        let status = match &outcome {
            Outcome::Failed(_, TurnStatus::Interrupted) => TurnItemStatus::Cancelled,
            _ => TurnItemStatus::Failed,
        };
        for (_, item) in left {
            if let Err(error) = self.completed(ended_with(item, status), |_| true) {
                eprintln!("turn {}: {error}", self.turn.id);
            }
        }
        if let Some(thread) = self.shared.state().threads.get_mut(&self.turn.thread_id) {
            thread.thread.active_turn_id = None;
        }
        let sent = match outcome {
            Outcome::Failed(failure, status) => self.send(
                "turn/failed",
                |sequence, inner| {
                    inner.turn.status = status;
                    inner.turn.error = Some(failure.clone());
                    inner.turn.completed_at = Some(now());
                    TurnFailedNotification {
                        thread_id: self.turn.thread_id.clone(),
                        turn_id: self.turn.id.clone(),
                        sequence,
                        turn: inner.turn.clone(),
                        error: failure,
                        extra: Default::default(),
                    }
                },
                ServerConnection::notify_turn_failed,
            ),
            Outcome::Completed(usage) => self.send(
                "turn/completed",
                |sequence, inner| {
                    inner.turn.status = TurnStatus::Completed;
                    inner.turn.usage.clone_from(&usage);
                    inner.turn.completed_at = Some(now());
                    TurnCompletedNotification {
                        thread_id: self.turn.thread_id.clone(),
                        turn_id: self.turn.id.clone(),
                        sequence,
                        turn: inner.turn.clone(),
                        usage,
                        extra: Default::default(),
                    }
                },
                ServerConnection::notify_turn_completed,
            ),
        };
        if let Err(error) = sent.and_then(|()| self.timeline_changed()) {
            eprintln!("turn {}: {error}", self.turn.id);
        }
    }

    /// Runs the turn to its end; whatever stops it early fails it.
    pub async fn run(self) {
        let result = tokio::select! {
            result = self.run_turn() => result,
            () = self.turn.cancelled() => return,
        };
        if self.turn.has_ended() {
            return;
        }
        match result {
            Ok(usage) => self.finish(Outcome::Completed(usage)),
            Err(failure) => self.finish(Outcome::Failed(failure, TurnStatus::Failed)),
        }
    }

    async fn run_turn(&self) -> Result<Option<TurnUsage>, TurnFailure> {
        let internal = |e: Error| failure(TurnFailureKind::Internal, e.to_string());
        self.turn_started().map_err(internal)?;
        self.timeline_changed().map_err(internal)?;
        let user = TurnItemUserMessage {
            id: new_id("item_"),
            status: TurnItemStatus::InProgress,
            content: self.turn.input.clone(),
            capabilities: None,
            extra: Default::default(),
        };
        let done = TurnItemUserMessage {
            status: TurnItemStatus::Completed,
            ..user.clone()
        };
        self.item(TurnItem::UserMessage(user), TurnItem::UserMessage(done))
            .map_err(internal)?;
        let mut messages = self.history();
        let snapshot = self.turn.snapshot();
        let agent = snapshot.mode == Some(TurnMode::Agent);
        let model = snapshot.model.unwrap_or_else(|| self.shared.model.clone());
        let cwd = self
            .shared
            .state()
            .threads
            .get(&self.turn.thread_id)
            .map(|t| t.thread.cwd.clone())
            .unwrap_or_default();
        let mut usage = TurnUsage::default();
        let mut reported = false;
        for round in 1.. {
            let completion = self
                .shared
                .provider
                .complete(&model, &messages, agent)
                .await
                .map_err(|ProviderError(message)| {
                    failure(TurnFailureKind::ProviderError, message)
                })?;
            if let Some(u) = completion.usage {
                reported = true;
                usage.input_tokens += u.prompt_tokens;
                usage.output_tokens += u.completion_tokens;
                usage.total_tokens = usage.input_tokens + usage.output_tokens;
            }
            let Some(choice) = completion.choices.into_iter().next() else {
                return Err(failure(
                    TurnFailureKind::ProviderError,
                    "the model's answer has no choices[0].message".to_owned(),
                ));
            };
            let message = choice.message;
            if let Some(reasoning) = message.reasoning_content.filter(|r| !r.is_empty()) {
                let started = TurnItemReasoning {
                    id: new_id("item_"),
                    status: TurnItemStatus::InProgress,
                    round: Some(round),
                    text: String::new(),
                    extra: Default::default(),
                };
                let completed = TurnItemReasoning {
                    status: TurnItemStatus::Completed,
                    text: reasoning,
                    ..started.clone()
                };
                self.item(TurnItem::Reasoning(started), TurnItem::Reasoning(completed))
                    .map_err(internal)?;
            }
            let content = message.content.clone().unwrap_or_default();
            if !content.is_empty() {
                let started = TurnItemAgentMessage {
                    round: Some(round),
                    ..TurnItemAgentMessage::new(
                        new_id("item_"),
                        TurnItemStatus::InProgress,
                        String::new(),
                    )
                };
                let completed = TurnItemAgentMessage {
                    status: TurnItemStatus::Completed,
                    text: content.clone(),
                    ..started.clone()
                };
                let id = started.id.clone();
                self.item_started(TurnItem::AgentMessage(started))
                    .map_err(internal)?;
                self.delta(&id, ItemDeltaStream::AgentMessage, &content)
                    .map_err(internal)?;
                self.item_completed(TurnItem::AgentMessage(completed))
                    .map_err(internal)?;
            }
            let calls = if agent {
                message.tool_calls
            } else {
                Vec::new()
            };
            if calls.is_empty() {
                self.turn.lock().answer = content;
                break;
            }
            messages.push(ChatMessage {
                role: "assistant",
                content: message.content,
                tool_calls: calls.clone(),
                tool_call_id: None,
            });
            for call in calls {
                let result = self.run_tool(&call, &cwd, round).await;
                if self.turn.has_ended() {
                    return Ok(None);
                }
                messages.push(ChatMessage {
                    role: "tool",
                    content: Some(result),
                    tool_calls: Vec::new(),
                    tool_call_id: Some(call.id),
                });
            }
        }
        Ok(reported.then_some(usage))
    }

    /// The model's view of the thread: its earlier questions and answers, then this turn's text.
    fn history(&self) -> Vec<ChatMessage> {
        let turns = self
            .shared
            .state()
            .threads
            .get(&self.turn.thread_id)
            .map(|t| t.turns.clone())
            .unwrap_or_default();
        let mut messages = Vec::new();
        for earlier in turns.iter().take_while(|t| !Arc::ptr_eq(t, &self.turn)) {
            messages.push(ChatMessage::text("user", &earlier.text));
            let answer = earlier.lock().answer.clone();
            if !answer.is_empty() {
                messages.push(ChatMessage::text("assistant", &answer));
            }
        }
        messages.push(ChatMessage::text("user", &self.turn.text));
        messages
    }
}

/// A turn failure that is not retryable.
pub fn failure(kind: TurnFailureKind, message: String) -> TurnFailure {
    TurnFailure {
        kind,
        message,
        retryable: false,
        extra: Default::default(),
    }
}

/// The id of an item, whatever its kind.
/// An item the turn's end left open, with the status it ends with.
fn ended_with(item: TurnItem, status: TurnItemStatus) -> TurnItem {
    let mut item = item;
    match &mut item {
        TurnItem::UserMessage(i) => i.status = status,
        TurnItem::AgentMessage(i) => i.status = status,
        TurnItem::Reasoning(i) => i.status = status,
        TurnItem::SystemEvent(i) => i.status = status,
        TurnItem::Task(i) => i.status = status,
        TurnItem::CommandExecution(i) => i.status = status,
        TurnItem::FileChange(i) => i.status = status,
        TurnItem::WebSearch(i) => i.status = status,
        TurnItem::WebFetch(i) => i.status = status,
        TurnItem::Download(i) => i.status = status,
        TurnItem::DynamicToolCall(i) => i.status = status,
    }
    item
}

fn item_id(item: &TurnItem) -> String {
    match item {
        TurnItem::UserMessage(i) => i.id.clone(),
        TurnItem::AgentMessage(i) => i.id.clone(),
        TurnItem::Reasoning(i) => i.id.clone(),
        TurnItem::SystemEvent(i) => i.id.clone(),
        TurnItem::Task(i) => i.id.clone(),
        TurnItem::CommandExecution(i) => i.id.clone(),
        TurnItem::FileChange(i) => i.id.clone(),
        TurnItem::WebSearch(i) => i.id.clone(),
        TurnItem::WebFetch(i) => i.id.clone(),
        TurnItem::Download(i) => i.id.clone(),
        TurnItem::DynamicToolCall(i) => i.id.clone(),
    }
}

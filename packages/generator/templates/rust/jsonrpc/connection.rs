//! One end of a JSON-RPC 2.0 connection over any [`Transport`]: requests sent and their
//! responses awaited, requests and notifications received dispatched to a [`Dispatch`].
//! Both ends use it; the generated `client` and `server` modules type it.
//!
//! What arrives is checked before a handler sees it: a frame that is not JSON is answered
//! -32700, one that is not a JSON-RPC message -32600, a method this side does not serve
//! -32601, params its schema refuses -32602 with every failing pointer (in `data.errors`).
//! A handler's error goes back as it is; a result its schema refuses is answered -32603
//! and reported to the connection's problem hook, as is a notification that is refused.

use std::cell::RefCell;
use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde::de::DeserializeOwned;
use serde::Serialize;
use tokio::sync::{mpsc, oneshot, watch};

use super::check::{validate, Mode, Schema, ValidationError};
use super::envelope::{classify, id_key, Message};
use super::json::{canonical, from_json, parse, to_json, Json};
use super::protocol::{Direction, Params, Protocol};
use super::transport::Transport;

/// A future a [`Dispatch`] returns, boxed so that any handler's future fits.
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

/// The answer a request is owed, and the tasks its handler deferred until it is sent.
type Answer = BoxFuture<(serde_json::Value, Vec<BoxFuture<()>>)>;

tokio::task_local! {
    /// The tasks the request being handled runs once its reply is sent.
    static AFTER_REPLY: RefCell<Vec<BoxFuture<()>>>;
}

/// Runs `task` once the reply to the request being handled has been sent: what a request
/// starts (a turn that streams notifications, say) then never overtakes its reply. Called
/// outside a request handler, it runs `task` now.
pub fn after_reply(task: impl Future<Output = ()> + Send + 'static) {
    let mut task: Option<BoxFuture<()>> = Some(Box::pin(task));
    let _ = AFTER_REPLY.try_with(|deferred| {
        if let Some(task) = task.take() {
            deferred.borrow_mut().push(task);
        }
    });
    if let Some(task) = task {
        tokio::spawn(task);
    }
}

/// A JSON-RPC error object, as sent or received.
#[derive(Clone, Debug, PartialEq)]
pub struct RpcError {
    /// The error code.
    pub code: i64,
    /// A short description.
    pub message: String,
    /// Anything more; the protocol's errors carry `{"reason": …}`.
    pub data: Option<serde_json::Value>,
}

impl RpcError {
    /// An error with a code and a message, no data.
    pub fn new(code: i64, message: impl Into<String>) -> RpcError {
        RpcError {
            code,
            message: message.into(),
            data: None,
        }
    }

    /// An error of a registered reason: its code, and `data.reason`.
    pub fn registered(code: i64, reason: &str, message: impl Into<String>) -> RpcError {
        RpcError {
            code,
            message: message.into(),
            data: Some(serde_json::json!({ "reason": reason })),
        }
    }

    /// The same error with `data` members added (`reason` stays).
    pub fn with_data(mut self, members: serde_json::Map<String, serde_json::Value>) -> RpcError {
        let mut data = match self.data.take() {
            Some(serde_json::Value::Object(existing)) => existing,
            _ => serde_json::Map::new(),
        };
        for (name, value) in members {
            if name != "reason" || !data.contains_key("reason") {
                data.insert(name, value);
            }
        }
        self.data = Some(serde_json::Value::Object(data));
        self
    }

    /// The registered reason the error carries in `data.reason`, if any.
    pub fn reason(&self) -> Option<&str> {
        self.data.as_ref()?.get("reason")?.as_str()
    }

    /// JSON-RPC's -32603, which says nothing of what went wrong inside.
    pub fn internal() -> RpcError {
        RpcError::registered(-32603, "internal_error", "Internal error")
    }

    fn to_object(&self) -> serde_json::Value {
        let mut object = serde_json::json!({ "code": self.code, "message": self.message });
        if let Some(data) = &self.data {
            object["data"] = data.clone();
        }
        object
    }

    fn from_object(error: &Json) -> RpcError {
        let code = error.get("code").and_then(|c| match c {
            Json::Number(n) => Some(*n),
            _ => None,
        });
        #[allow(clippy::cast_possible_truncation)]
        let code = code.unwrap_or(0.0) as i64;
        let message = error
            .get("message")
            .and_then(Json::as_str)
            .unwrap_or_default()
            .to_owned();
        RpcError {
            code,
            message,
            data: error.get("data").map(Json::to_value),
        }
    }
}

impl fmt::Display for RpcError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.reason() {
            Some(reason) => write!(f, "{} ({}, {reason})", self.message, self.code),
            None => write!(f, "{} ({})", self.message, self.code),
        }
    }
}

impl std::error::Error for RpcError {}

/// What can go wrong with a request or notification sent.
#[derive(Debug)]
pub enum Error {
    /// The peer answered with an error.
    Rpc(RpcError),
    /// What was to be sent does not match its schema; nothing was sent.
    InvalidOutgoing(ValidationError),
    /// What the peer answered does not match its schema.
    InvalidIncoming(ValidationError),
    /// What the peer answered matched its schema but not the Rust type (a message says why).
    Decode(String),
    /// The connection closed before the answer came.
    Closed,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Rpc(error) => write!(f, "the peer answered with an error: {error}"),
            Error::InvalidOutgoing(error) => write!(f, "not sent: {error}"),
            Error::InvalidIncoming(error) => write!(f, "the peer's answer is {error}"),
            Error::Decode(message) => write!(f, "the peer's answer did not decode: {message}"),
            Error::Closed => f.write_str("the connection is closed"),
        }
    }
}

impl std::error::Error for Error {}

impl From<RpcError> for Error {
    fn from(error: RpcError) -> Error {
        Error::Rpc(error)
    }
}

/// What the other end may ask of this one: the generated `client` and `server` modules
/// implement it over their handler traits. Params reach it validated.
pub trait Dispatch: Send + Sync + 'static {
    /// Answers a request, its params validated (`None` when the frame left them out); `None`
    /// when this side does not serve the method.
    fn request(
        &self,
        method: &str,
        params: Option<Json>,
        peer: &Connection,
    ) -> Option<BoxFuture<Result<Json, RpcError>>>;
    /// Takes a notification, its params validated (`None` when the frame left them out).
    fn notification(&self, method: &str, params: Option<Json>, peer: &Connection) -> BoxFuture<()>;
}

/// Something a connection noticed that it cannot answer (a refused notification, a handler's
/// result its schema refuses, an answer to no request).
pub type ProblemHook = Arc<dyn Fn(&str) + Send + Sync>;

/// How a connection behaves.
#[derive(Clone)]
pub struct Options {
    /// How strictly what the peer sends is validated.
    pub mode: Mode,
    /// Where problems that cannot be answered go; the default writes them to standard error.
    pub on_problem: ProblemHook,
}

impl Options {
    /// Options with `mode` and problems written to standard error.
    pub fn new(mode: Mode) -> Options {
        Options {
            mode,
            on_problem: Arc::new(|problem| eprintln!("jsonrpc: {problem}")),
        }
    }
}

impl fmt::Debug for Options {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Options")
            .field("mode", &self.mode)
            .finish_non_exhaustive()
    }
}

type Waiting = oneshot::Sender<Result<Json, RpcError>>;

struct Inner {
    protocol: &'static Protocol,
    sends: Direction,
    options: Options,
    outgoing: mpsc::UnboundedSender<String>,
    pending: Mutex<Option<HashMap<String, Waiting>>>,
    next_id: AtomicU64,
    closed: watch::Receiver<bool>,
}

/// One end of a connection. Cheap to clone: every clone is the same end.
#[derive(Clone)]
pub struct Connection {
    inner: Arc<Inner>,
}

impl fmt::Debug for Connection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Connection")
            .field("protocol", &self.inner.protocol.title)
            .field("sends", &self.inner.sends)
            .finish()
    }
}

impl Connection {
    /// Starts a connection over `transport` for the side that sends `sends` requests and
    /// notifications, answering what the peer sends with `dispatch`.
    pub fn start(
        transport: Transport,
        protocol: &'static Protocol,
        sends: Direction,
        dispatch: Arc<dyn Dispatch>,
        options: Options,
    ) -> Connection {
        let Transport {
            mut incoming,
            outgoing,
        } = transport;
        let (closed_tx, closed) = watch::channel(false);
        let inner = Arc::new(Inner {
            protocol,
            sends,
            options,
            outgoing,
            pending: Mutex::new(Some(HashMap::new())),
            next_id: AtomicU64::new(1),
            closed,
        });
        let connection = Connection { inner };
        let reader = connection.clone();
        // Notifications are handled one at a time, in the order they came.
        let (notify_tx, mut notify_rx) = mpsc::unbounded_channel::<(String, Option<Json>)>();
        let notified = connection.clone();
        let notifier = dispatch.clone();
        tokio::spawn(async move {
            while let Some((method, params)) = notify_rx.recv().await {
                notifier.notification(&method, params, &notified).await;
            }
        });
        tokio::spawn(async move {
            while let Some(frame) = incoming.recv().await {
                reader.frame(&frame, &dispatch, &notify_tx);
            }
            let waiting = reader
                .inner
                .pending
                .lock()
                .map(|mut p| p.take())
                .unwrap_or_default();
            drop(waiting);
            let _ = closed_tx.send(true);
        });
        connection
    }

    /// The protocol spoken.
    pub fn protocol(&self) -> &'static Protocol {
        self.inner.protocol
    }

    /// How strictly what the peer sends is validated.
    pub fn mode(&self) -> Mode {
        self.inner.options.mode
    }

    /// Waits until the peer has closed the connection (its transport ended).
    pub async fn closed(&self) {
        let mut closed = self.inner.closed.clone();
        while !*closed.borrow_and_update() {
            if closed.changed().await.is_err() {
                return;
            }
        }
    }

    fn problem(&self, problem: &str) {
        (self.inner.options.on_problem)(problem);
    }

    fn send_text(&self, text: String) -> Result<(), Error> {
        self.inner.outgoing.send(text).map_err(|_| Error::Closed)
    }

    fn send_json(&self, value: &serde_json::Value) {
        // A response that cannot be sent means the connection is gone; nothing more to do.
        let _ = self.send_text(canonical(value).unwrap_or_else(|_| value.to_string()));
    }

    /// Sends a request (without params when `params` is `None`) and waits for its answer:
    /// the result, or the peer's error.
    pub async fn request_json(&self, method: &str, params: Option<Json>) -> Result<Json, Error> {
        let id = self.inner.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        {
            let mut pending = self.inner.pending.lock().map_err(|_| Error::Closed)?;
            let Some(pending) = pending.as_mut() else {
                return Err(Error::Closed);
            };
            pending.insert(id_key(&Json::Number(id as f64)), tx);
        }
        let mut frame = serde_json::json!({ "jsonrpc": "2.0", "id": id, "method": method });
        if let Some(params) = params {
            frame["params"] =
                serde_json::to_value(params).map_err(|e| Error::Decode(e.to_string()))?;
        }
        self.send_text(canonical(&frame).map_err(|e| Error::Decode(e.to_string()))?)?;
        match rx.await {
            Ok(Ok(result)) => Ok(result),
            Ok(Err(error)) => Err(Error::Rpc(error)),
            Err(_) => Err(Error::Closed),
        }
    }

    /// Sends a notification (without params when `params` is `None`).
    pub fn notify_json(&self, method: &str, params: Option<Json>) -> Result<(), Error> {
        let mut frame = serde_json::json!({ "jsonrpc": "2.0", "method": method });
        if let Some(params) = params {
            frame["params"] =
                serde_json::to_value(params).map_err(|e| Error::Decode(e.to_string()))?;
        }
        self.send_text(canonical(&frame).map_err(|e| Error::Decode(e.to_string()))?)
    }

    /// Sends a typed request: the params validated strictly (refused ones are not sent), the
    /// result validated in the connection's mode and decoded.
    /// A request whose params may be left out sends none for `None`.
    pub async fn request<P, R>(&self, method: &str, params: Option<&P>) -> Result<R, Error>
    where
        P: Serialize + Schema,
        R: DeserializeOwned + Schema,
    {
        let params = params.map(outgoing).transpose()?;
        let result = self.request_json(method, params).await?;
        incoming::<R>(&result, self.mode())
    }

    /// Sends a typed request of a method that takes no params.
    pub async fn request_without_params<R>(&self, method: &str) -> Result<R, Error>
    where
        R: DeserializeOwned + Schema,
    {
        let result = self.request_json(method, None).await?;
        incoming::<R>(&result, self.mode())
    }

    /// Sends a typed notification, its params validated strictly first; `None` sends none.
    pub fn notify<P: Serialize + Schema>(
        &self,
        method: &str,
        params: Option<&P>,
    ) -> Result<(), Error> {
        let params = params.map(outgoing).transpose()?;
        self.notify_json(method, params)
    }

    /// Sends a notification that takes no params.
    pub fn notify_without_params(&self, method: &str) -> Result<(), Error> {
        self.notify_json(method, None)
    }

    fn frame(
        &self,
        frame: &str,
        dispatch: &Arc<dyn Dispatch>,
        notify: &mpsc::UnboundedSender<(String, Option<Json>)>,
    ) {
        let value = match parse(frame) {
            Ok(value) => value,
            Err(error) => {
                let error =
                    RpcError::registered(-32700, "parse_error", format!("Parse error: {error}"));
                self.send_json(&response(&Json::Null, Err(&error)));
                return;
            }
        };
        match value {
            Json::Array(items) if items.is_empty() => {
                let error = RpcError::registered(
                    -32600,
                    "invalid_request",
                    "Invalid Request: an empty batch",
                );
                self.send_json(&response(&Json::Null, Err(&error)));
            }
            Json::Array(_) if !self.inner.protocol.batches => {
                self.problem(
                    "the peer sent a batch, and the protocol does not allow JSON-RPC batches",
                );
                let error = RpcError::registered(
                    -32600,
                    "invalid_request",
                    "Invalid Request: the protocol does not allow batches",
                );
                self.send_json(&response(&Json::Null, Err(&error)));
            }
            Json::Array(items) => {
                let answers: Vec<_> = items
                    .iter()
                    .filter_map(|item| self.message(item, dispatch, notify))
                    .collect();
                if answers.is_empty() {
                    return;
                }
                let connection = self.clone();
                tokio::spawn(async move {
                    let mut replies = Vec::new();
                    let mut later = Vec::new();
                    for answer in answers {
                        let (reply, deferred) = answer.await;
                        replies.push(reply);
                        later.extend(deferred);
                    }
                    connection.send_json(&serde_json::Value::Array(replies));
                    for task in later {
                        tokio::spawn(task);
                    }
                });
            }
            message => {
                if let Some(answer) = self.message(&message, dispatch, notify) {
                    let connection = self.clone();
                    tokio::spawn(async move {
                        let (reply, deferred) = answer.await;
                        connection.send_json(&reply);
                        for task in deferred {
                            tokio::spawn(task);
                        }
                    });
                }
            }
        }
    }

    /// Handles one message; returns the answer it is owed, if any, as a future.
    fn message(
        &self,
        message: &Json,
        dispatch: &Arc<dyn Dispatch>,
        notify: &mpsc::UnboundedSender<(String, Option<Json>)>,
    ) -> Option<Answer> {
        let protocol = self.inner.protocol;
        let answer = |id: &Json, error: RpcError| -> Option<Answer> {
            let reply = response(id, Err(&error));
            Some(Box::pin(async move { (reply, Vec::new()) }))
        };
        match classify(message) {
            Message::Invalid { id, reason } => {
                let error = RpcError::registered(
                    -32600,
                    "invalid_request",
                    format!("Invalid Request: {reason}"),
                );
                answer(id.unwrap_or(&Json::Null), error)
            }
            Message::Result { id, result } => {
                self.settle(id, Ok(result.clone()));
                None
            }
            Message::Error { id, error } => {
                self.settle(id, Err(RpcError::from_object(error)));
                None
            }
            Message::Notification { method, params } => {
                let served = protocol
                    .notification(method)
                    .filter(|n| n.direction.sent_by(self.inner.sends.other()));
                let Some(entry) = served else {
                    self.problem(&format!(
                        "ignored the notification {method}: the peer does not send it"
                    ));
                    return None;
                };
                let params = match self.params(&entry.params, params) {
                    Ok(params) => params,
                    Err(error) => {
                        self.problem(&format!("ignored the notification {method}: {error}"));
                        return None;
                    }
                };
                let _ = notify.send((method.to_owned(), params));
                None
            }
            Message::Request { id, method, params } => {
                let served = protocol
                    .method(method)
                    .filter(|m| m.direction.sent_by(self.inner.sends.other()));
                let Some(entry) = served else {
                    let error = RpcError::registered(
                        -32601,
                        "method_not_found",
                        format!("Method not found: {method}"),
                    )
                    .with_data(serde_json::Map::from_iter([(
                        "method".to_owned(),
                        method.into(),
                    )]));
                    return answer(id, error);
                };
                let params = match self.params(&entry.params, params) {
                    Ok(params) => params,
                    Err(error) => return answer(id, invalid_params(method, &error)),
                };
                let Some(handled) = dispatch.request(method, params, self) else {
                    let error = RpcError::registered(
                        -32601,
                        "method_not_found",
                        format!("Method not found: {method}"),
                    );
                    return answer(id, error);
                };
                let id = id.clone();
                let connection = self.clone();
                let method = entry.name;
                let handled = AFTER_REPLY.scope(RefCell::new(Vec::new()), async move {
                    let outcome = handled.await;
                    (outcome, AFTER_REPLY.with(RefCell::take))
                });
                Some(Box::pin(async move {
                    let (outcome, deferred) = handled.await;
                    match outcome {
                        Ok(result) => {
                            match (protocol.validate)(entry.result, &result, Mode::Strict) {
                                // What the handler deferred does not run: its request failed.
                                Some(Err(error)) => {
                                    connection.problem(&format!(
                                        "the result of {method} was not sent: {error}"
                                    ));
                                    (response(&id, Err(&RpcError::internal())), Vec::new())
                                }
                                _ => (response(&id, Ok(&result)), deferred),
                            }
                        }
                        Err(error) => (response(&id, Err(&error)), deferred),
                    }
                }))
            }
        }
    }

    fn settle(&self, id: &Json, outcome: Result<Json, RpcError>) {
        let waiting = self
            .inner
            .pending
            .lock()
            .ok()
            .and_then(|mut pending| pending.as_mut().and_then(|p| p.remove(&id_key(id))));
        match waiting {
            Some(waiting) => {
                let _ = waiting.send(outcome);
            }
            None => self.problem(&format!("an answer to no request sent: id {id}")),
        }
    }
}

/// The -32602 answer to params their schema refuses: each failing pointer in `data.errors`.
pub fn invalid_params(method: &str, error: &ValidationError) -> RpcError {
    let described: Vec<String> = error.issues.iter().map(ToString::to_string).collect();
    let errors: Vec<serde_json::Value> = error
        .issues
        .iter()
        .map(|i| serde_json::json!({ "pointer": i.pointer, "message": i.message }))
        .collect();
    RpcError::registered(
        -32602,
        "invalid_params",
        format!("Invalid params for {method}: {}", described.join("; ")),
    )
    .with_data(serde_json::Map::from_iter([(
        "errors".to_owned(),
        serde_json::Value::Array(errors),
    )]))
}

impl Connection {
    /// A frame's params read as their entry says (present or not, by name or by position)
    /// and validated in the connection's mode.
    fn params(&self, entry: &Params, raw: Option<&Json>) -> Result<Option<Json>, ValidationError> {
        let read = entry.read(raw).map_err(|issue| ValidationError {
            type_name: entry.schema.unwrap_or("params").to_owned(),
            issues: vec![issue],
        })?;
        if let (Some(schema), Some(params)) = (entry.schema, &read) {
            if let Some(Err(error)) = (self.inner.protocol.validate)(schema, params, self.mode()) {
                return Err(error);
            }
        }
        Ok(read)
    }
}

fn response(id: &Json, outcome: Result<&Json, &RpcError>) -> serde_json::Value {
    match outcome {
        Ok(result) => {
            serde_json::json!({ "jsonrpc": "2.0", "id": id.to_value(), "result": result.to_value() })
        }
        Err(error) => {
            serde_json::json!({ "jsonrpc": "2.0", "id": id.to_value(), "error": error.to_object() })
        }
    }
}

/// A typed value about to be sent: its JSON, validated strictly.
pub fn outgoing<T: Serialize + Schema>(value: &T) -> Result<Json, Error> {
    let json = serde_json::to_value(value).map_err(|e| Error::Decode(e.to_string()))?;
    validate::<T, _>(&json, Mode::Strict).map_err(Error::InvalidOutgoing)?;
    Ok(Json::from(&json))
}

/// A value received: validated in `mode` and decoded into its type.
pub fn incoming<T: DeserializeOwned + Schema>(value: &Json, mode: Mode) -> Result<T, Error> {
    validate::<T, _>(value, mode).map_err(Error::InvalidIncoming)?;
    from_json(value).map_err(|e| Error::Decode(e.to_string()))
}

/// Params a dispatcher received (already validated) decoded into their type, or the -32602
/// that says why they do not fit it (or that they were left out).
pub fn decode_params<T: DeserializeOwned>(
    method: &str,
    params: Option<Json>,
) -> Result<T, RpcError> {
    let invalid = |why: String| {
        RpcError::registered(
            -32602,
            "invalid_params",
            format!("Invalid params for {method}: {why}"),
        )
    };
    let params = params.ok_or_else(|| invalid("they are required".to_owned()))?;
    from_json(&params).map_err(|e| invalid(e.to_string()))
}

/// Params a frame may leave out, decoded as [`decode_params`] does: `None` when left out.
pub fn decode_optional_params<T: DeserializeOwned>(
    method: &str,
    params: Option<Json>,
) -> Result<Option<T>, RpcError> {
    params.map(|p| decode_params(method, Some(p))).transpose()
}

/// A handler's typed result as the JSON to answer with.
pub fn encode_result<T: Serialize>(result: Result<T, RpcError>) -> Result<Json, RpcError> {
    let value = result?;
    to_json(&value).map_err(|_| RpcError::internal())
}

//! The JSON-RPC 2.0 envelope: how a parsed frame is classified before any method schema is
//! consulted.

use super::json::{Json, JsonView};

/// A request id: a string or a number.
pub type Id = Json;

/// What a single (non-batch) message is.
#[derive(Debug)]
pub enum Message<'a> {
    /// A request: it has an id and expects a response.
    Request {
        /// The id the response will carry.
        id: &'a Json,
        /// The method.
        method: &'a str,
        /// The params, when given.
        params: Option<&'a Json>,
    },
    /// A notification: no id, no response.
    Notification {
        /// The notification's name.
        method: &'a str,
        /// The params, when given.
        params: Option<&'a Json>,
    },
    /// A successful response.
    Result {
        /// The id of the request answered (null when the request could not be read).
        id: &'a Json,
        /// The result.
        result: &'a Json,
    },
    /// An error response.
    Error {
        /// The id of the request answered (null when the request could not be read).
        id: &'a Json,
        /// The error object: an integer `code`, a string `message`, maybe `data`.
        error: &'a Json,
    },
    /// Not a valid JSON-RPC 2.0 message.
    Invalid {
        /// The id, when one could be read.
        id: Option<&'a Json>,
        /// Why it is not valid.
        reason: String,
    },
}

fn is_id(value: &Json) -> bool {
    match value {
        Json::String(_) => true,
        Json::Number(n) => n.is_finite(),
        _ => false,
    }
}

/// Classifies one parsed message. Unknown members make a message invalid, as JSON-RPC 2.0
/// defines it.
pub fn classify(value: &Json) -> Message<'_> {
    let Json::Object(members) = value else {
        return Message::Invalid {
            id: None,
            reason: "a JSON-RPC message must be an object".to_owned(),
        };
    };
    let id = members.get("id").filter(|id| is_id(id));
    fn invalid<'a>(id: Option<&'a Json>, reason: &str) -> Message<'a> {
        Message::Invalid {
            id,
            reason: reason.to_owned(),
        }
    }
    if members.get("jsonrpc").and_then(Json::as_str) != Some("2.0") {
        return invalid(id, "jsonrpc must be \"2.0\"");
    }
    if let Some(raw) = members.get("id") {
        if *raw != Json::Null && !is_id(raw) {
            return invalid(None, "id must be a string, a number or null");
        }
    }
    if let Some(method) = members.get("method") {
        let Some(method) = method.as_str().filter(|m| !m.is_empty()) else {
            return invalid(id, "method must be a non-empty string");
        };
        let params = members.get("params");
        if let Some(p) = params {
            if !matches!(p, Json::Object(_) | Json::Array(_)) {
                return invalid(id, "params must be an object or an array");
            }
        }
        if let Some(key) = members
            .keys()
            .find(|k| !matches!(k.as_str(), "jsonrpc" | "id" | "method" | "params"))
        {
            return invalid(id, &format!("unknown member \"{key}\" in a request"));
        }
        return match members.get("id") {
            None => Message::Notification { method, params },
            Some(Json::Null) => invalid(None, "a request id must not be null"),
            Some(id) => Message::Request { id, method, params },
        };
    }
    let result = members.get("result");
    let error = members.get("error");
    if result.is_none() && error.is_none() {
        return invalid(
            id,
            "a message needs a method (request or notification) or a result or error (response)",
        );
    }
    let Some(raw_id) = members.get("id") else {
        return invalid(None, "a response must carry an id");
    };
    match (result, error) {
        (Some(_), Some(_)) => invalid(id, "a response carries result or error, not both"),
        (Some(result), None) => Message::Result { id: raw_id, result },
        (None, Some(error)) => {
            let code_ok = error
                .member("code")
                .and_then(JsonView::number)
                .is_some_and(|c| c.is_finite() && c.fract() == 0.0);
            let message_ok = error
                .member("message")
                .is_some_and(|m| m.as_str().is_some());
            if code_ok && message_ok && matches!(error, Json::Object(_)) {
                Message::Error { id: raw_id, error }
            } else {
                invalid(
                    id,
                    "error must be an object with an integer code and a string message",
                )
            }
        }
        (None, None) => unreachable!("checked above"),
    }
}

/// A key for an id, the same for ids JSON considers equal.
pub fn id_key(id: &Json) -> String {
    match id {
        Json::String(s) => format!("s:{}", s.as_str()),
        Json::Number(n) => format!("n:{}", super::json::format_number(*n)),
        other => format!("?:{other}"),
    }
}

//! Checks a sequence of JSON-RPC messages against the protocol: a request against its
//! method's params, a response against the result of the request with the same id seen
//! earlier (or as a registered error), a notification against its params.

use std::collections::HashMap;

use super::check::{Mode, ValidationError};
use super::envelope::{classify, id_key, Message};
use super::json::{Json, JsonView};
use super::protocol::{Params, Protocol};

/// One problem with one message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    /// The index of the message in the sequence.
    pub index: usize,
    /// The method or notification the message is about, when known.
    pub method: Option<String>,
    /// Where `pointer` starts: `params`, `result`, `error`, or `""` for the message itself.
    pub part: &'static str,
    /// The JSON pointer into the part.
    pub pointer: String,
    /// What is wrong.
    pub message: String,
}

impl Finding {
    /// The pointer into the message: `/params/…`, `/result/…`, `/error/…`, or the envelope's own.
    pub fn message_pointer(&self) -> String {
        if self.part.is_empty() {
            self.pointer.clone()
        } else {
            format!("/{}{}", self.part, self.pointer)
        }
    }
}

/// Checks messages in order, remembering requests so that their responses are checked
/// against the right result type.
#[derive(Debug)]
pub struct MessageChecker {
    protocol: &'static Protocol,
    mode: Mode,
    requests: HashMap<String, &'static str>,
}

impl MessageChecker {
    /// A checker of `protocol`'s messages in `mode`.
    pub fn new(protocol: &'static Protocol, mode: Mode) -> MessageChecker {
        MessageChecker {
            protocol,
            mode,
            requests: HashMap::new(),
        }
    }

    /// Checks one message (or batch) and returns its findings.
    pub fn check(&mut self, value: &Json, index: usize) -> Vec<Finding> {
        if let Json::Array(items) = value {
            if items.is_empty() {
                return vec![finding(
                    index,
                    None,
                    "",
                    String::new(),
                    "an empty batch is not a valid JSON-RPC message",
                )];
            }
            let mut out = Vec::new();
            if !self.protocol.batches {
                out.push(finding(
                    index,
                    None,
                    "",
                    String::new(),
                    "is a batch, and the protocol does not allow JSON-RPC batches",
                ));
            }
            for (i, item) in items.iter().enumerate() {
                for mut f in self.check_one(item, index) {
                    if f.part.is_empty() {
                        f.pointer = format!("/{i}{}", f.pointer);
                    }
                    out.push(f);
                }
            }
            return out;
        }
        self.check_one(value, index)
    }

    /// The params of a request or notification: their presence and structure, then their schema.
    fn params(
        &self,
        entry: &Params,
        raw: Option<&Json>,
        index: usize,
        method: &str,
    ) -> Vec<Finding> {
        match entry.read(raw) {
            Err(issue) => vec![finding(
                index,
                Some(method),
                "params",
                issue.pointer,
                &issue.message,
            )],
            Ok(Some(params)) => match entry.schema {
                Some(schema) => self.validated(schema, &params, "params", index, method),
                None => Vec::new(),
            },
            Ok(None) => Vec::new(),
        }
    }

    fn validated(
        &self,
        type_name: &str,
        value: &Json,
        part: &'static str,
        index: usize,
        method: &str,
    ) -> Vec<Finding> {
        match (self.protocol.validate)(type_name, value, self.mode) {
            Some(Err(ValidationError { issues, .. })) => issues
                .into_iter()
                .map(|issue| finding(index, Some(method), part, issue.pointer, &issue.message))
                .collect(),
            _ => Vec::new(),
        }
    }

    fn check_one(&mut self, value: &Json, index: usize) -> Vec<Finding> {
        match classify(value) {
            Message::Invalid { reason, .. } => {
                vec![finding(
                    index,
                    None,
                    "",
                    String::new(),
                    &format!("not a valid JSON-RPC 2.0 message: {reason}"),
                )]
            }
            Message::Request { id, method, params } => {
                let Some(entry) = self.protocol.method(method) else {
                    let hint = if self.protocol.notification(method).is_some() {
                        " (it is a notification: it has no id)"
                    } else {
                        ""
                    };
                    return vec![finding(
                        index,
                        Some(method),
                        "",
                        "/method".to_owned(),
                        &format!("is not a method of the protocol{hint}"),
                    )];
                };
                self.requests.insert(id_key(id), entry.name);
                self.params(&entry.params, params, index, method)
            }
            Message::Notification { method, params } => {
                let Some(entry) = self.protocol.notification(method) else {
                    let hint = if self.protocol.method(method).is_some() {
                        " (it is a method: a request needs an id)"
                    } else {
                        ""
                    };
                    return vec![finding(
                        index,
                        Some(method),
                        "",
                        "/method".to_owned(),
                        &format!("is not a notification of the protocol{hint}"),
                    )];
                };
                self.params(&entry.params, params, index, method)
            }
            Message::Result { id, result } => {
                let method = self.requests.get(&id_key(id)).copied();
                let Some(method) = method.filter(|_| *id != Json::Null) else {
                    return vec![finding(
                        index,
                        None,
                        "",
                        "/id".to_owned(),
                        "answers no request seen earlier in the input",
                    )];
                };
                let entry = self
                    .protocol
                    .method(method)
                    .expect("a method remembered from the table");
                self.validated(entry.result, result, "result", index, method)
            }
            Message::Error { id, error } => {
                let method = if *id == Json::Null {
                    None
                } else {
                    self.requests.get(&id_key(id)).copied()
                };
                self.check_error(error, index, method)
            }
        }
    }

    /// Checks an error response: its code against the registry and against the errors the
    /// method answers with, and its data against the type the error (or else the method)
    /// gives it.
    fn check_error(
        &self,
        error: &Json,
        index: usize,
        method: Option<&'static str>,
    ) -> Vec<Finding> {
        let code = error
            .member("code")
            .and_then(JsonView::number)
            .unwrap_or(0.0);
        #[allow(clippy::cast_possible_truncation)]
        let code = code as i64;
        let registered = self.protocol.error_by_code(code);
        let reason = error
            .member("data")
            .and_then(|d| d.member("reason"))
            .and_then(Json::as_str);
        let one = |pointer: &str, message: String| {
            vec![finding(
                index,
                method,
                "error",
                pointer.to_owned(),
                &message,
            )]
        };
        if let Some(expected) = reason.and_then(|r| self.protocol.error(r)) {
            if expected.code != code {
                return one(
                    "/code",
                    format!(
                        "does not match the registered code {} of reason \"{}\"",
                        expected.code, expected.reason
                    ),
                );
            }
        }
        // The error's own data type, else the one the method gives every error it answers with.
        let data_type = registered.and_then(|r| r.data).or_else(|| {
            method
                .and_then(|m| self.protocol.method(m))
                .and_then(|entry| entry.error_data)
        });
        if let (Some(registered), Some(reason), None) = (registered, reason, data_type) {
            if reason != registered.reason && self.protocol.error(reason).is_none() {
                return one(
                    "/data/reason",
                    format!(
                        "is not an error reason of the protocol (code {code} is \"{}\")",
                        registered.reason
                    ),
                );
            }
        }
        let Some(registered) = registered else {
            if !(-32768..=-32000).contains(&code) {
                return Vec::new();
            }
            return one("/code", "is not in the error registry".to_owned());
        };
        let mut findings = Vec::new();
        if let Some(method) = method {
            let entry = self
                .protocol
                .method(method)
                .expect("a method remembered from the table");
            if !registered.any_method && !entry.errors.contains(&registered.reason) {
                findings.extend(one(
                    "/code",
                    format!(
                        "\"{}\" is not an error {method} is registered to return",
                        registered.reason
                    ),
                ));
            }
        }
        let Some(data_type) = data_type else {
            return findings;
        };
        match error.member("data") {
            // Missing data is a finding only when the error itself says what it carries.
            None => {
                if registered.data.is_some() {
                    findings.extend(one(
                        "/data",
                        format!(
                            "is missing: error \"{}\" carries data of type {data_type}",
                            registered.reason
                        ),
                    ));
                }
            }
            Some(data) => {
                if let Some(Err(ValidationError { issues, .. })) =
                    (self.protocol.validate)(data_type, data, self.mode)
                {
                    findings.extend(issues.into_iter().map(|issue| {
                        finding(
                            index,
                            method,
                            "error",
                            format!("/data{}", issue.pointer),
                            &issue.message,
                        )
                    }));
                }
            }
        }
        findings
    }
}

fn finding(
    index: usize,
    method: Option<&str>,
    part: &'static str,
    pointer: String,
    message: &str,
) -> Finding {
    Finding {
        index,
        method: method.map(str::to_owned),
        part,
        pointer,
        message: message.to_owned(),
    }
}

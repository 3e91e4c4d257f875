//! A protocol as one value: its method, notification and error tables, validation of each
//! named type by name, typed round trips, and its ordering rules. The generated `registry`
//! module defines the protocol's `PROTOCOL`; the message checker, the endpoints and the
//! testee read it.

use super::check::{Mode, ValidationError};
use super::json::Json;
use super::ordering::Rule;

/// Who sends a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Direction {
    /// The client sends it to the server.
    ClientToServer,
    /// The server sends it to the client.
    ServerToClient,
}

impl Direction {
    /// The side that answers what this side sends.
    pub fn other(self) -> Direction {
        match self {
            Direction::ClientToServer => Direction::ServerToClient,
            Direction::ServerToClient => Direction::ClientToServer,
        }
    }

    /// The direction as protocol.json writes it.
    pub fn name(self) -> &'static str {
        match self {
            Direction::ClientToServer => "client_to_server",
            Direction::ServerToClient => "server_to_client",
        }
    }

    /// The direction protocol.json names, if any.
    pub fn from_name(name: &str) -> Option<Direction> {
        match name {
            "client_to_server" => Some(Direction::ClientToServer),
            "server_to_client" => Some(Direction::ServerToClient),
            _ => None,
        }
    }
}

/// A method: a request and its response.
#[derive(Debug)]
pub struct MethodEntry {
    /// The method's name, e.g. `turn/start`.
    pub name: &'static str,
    /// Who sends the request.
    pub direction: Direction,
    /// The named type of the params.
    pub params: &'static str,
    /// The named type of the result.
    pub result: &'static str,
    /// The reasons of the registered errors the method may answer with.
    pub errors: &'static [&'static str],
}

/// A notification.
#[derive(Debug)]
pub struct NotificationEntry {
    /// The notification's name.
    pub name: &'static str,
    /// Who sends it.
    pub direction: Direction,
    /// The named type of the params.
    pub params: &'static str,
}

/// A registered error.
#[derive(Debug)]
pub struct ErrorEntry {
    /// The reason, sent as `error.data.reason`.
    pub reason: &'static str,
    /// The JSON-RPC error code.
    pub code: i64,
    /// Whether any request may be answered with it.
    pub any_method: bool,
}

/// What went wrong decoding a value into its Rust type and encoding it again.
#[derive(Debug)]
pub enum RoundTripError {
    /// The schema refuses the value.
    Invalid(ValidationError),
    /// The value did not decode or encode (a message says why).
    Failed(String),
}

/// A protocol's tables and what reads values by their type's name.
#[derive(Debug)]
pub struct Protocol {
    /// The protocol's title.
    pub title: &'static str,
    /// Its version.
    pub version: &'static str,
    /// sha256 over the schemas folder the code was generated from.
    pub digest: &'static str,
    /// Every method.
    pub methods: &'static [MethodEntry],
    /// Every notification.
    pub notifications: &'static [NotificationEntry],
    /// Every registered error, the standard JSON-RPC ones included.
    pub errors: &'static [ErrorEntry],
    /// The ordering rules.
    pub ordering: &'static [Rule],
    /// Validates a value as the named type; `None` when there is no such type.
    pub validate: fn(&str, &Json, Mode) -> Option<Result<(), ValidationError>>,
    /// Validates a value as the named type, decodes it into its Rust type and writes that
    /// as canonical JSON; `None` when there is no such type.
    pub round_trip: fn(&str, &Json, Mode) -> Option<Result<String, RoundTripError>>,
}

impl Protocol {
    /// The method of that name.
    pub fn method(&self, name: &str) -> Option<&'static MethodEntry> {
        self.methods.iter().find(|m| m.name == name)
    }

    /// The notification of that name.
    pub fn notification(&self, name: &str) -> Option<&'static NotificationEntry> {
        self.notifications.iter().find(|n| n.name == name)
    }

    /// The registered error of that reason.
    pub fn error(&self, reason: &str) -> Option<&'static ErrorEntry> {
        self.errors.iter().find(|e| e.reason == reason)
    }

    /// The registered error of that code.
    pub fn error_by_code(&self, code: i64) -> Option<&'static ErrorEntry> {
        self.errors.iter().find(|e| e.code == code)
    }
}

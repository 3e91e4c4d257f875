//! A protocol as one value: its method, notification and error tables, validation of each
//! named type by name, typed round trips, and its ordering rules. The generated `registry`
//! module defines the protocol's `PROTOCOL`; the message checker, the endpoints and the
//! testee read it.

use super::check::{Mode, ValidationError, ValidationIssue};
use super::json::Json;
use super::ordering::Rule;

/// Which way a frame goes: what an end sends, and who sends a message of the protocol. An end
/// of a connection is always one of the first two; a message either side sends is `Both`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Direction {
    /// The client sends it to the server.
    ClientToServer,
    /// The server sends it to the client.
    ServerToClient,
    /// Either side sends it (a message's direction, never an end's).
    Both,
}

impl Direction {
    /// The side that answers what this side sends.
    pub fn other(self) -> Direction {
        match self {
            Direction::ClientToServer => Direction::ServerToClient,
            Direction::ServerToClient => Direction::ClientToServer,
            Direction::Both => Direction::Both,
        }
    }

    /// Whether the end sending `side`'s frames may send a message of this direction.
    pub fn sent_by(self, side: Direction) -> bool {
        self == Direction::Both || self == side
    }

    /// The direction as protocol.json writes it.
    pub fn name(self) -> &'static str {
        match self {
            Direction::ClientToServer => "client_to_server",
            Direction::ServerToClient => "server_to_client",
            Direction::Both => "both",
        }
    }

    /// The direction protocol.json names, if any.
    pub fn from_name(name: &str) -> Option<Direction> {
        match name {
            "client_to_server" => Some(Direction::ClientToServer),
            "server_to_client" => Some(Direction::ServerToClient),
            "both" => Some(Direction::Both),
            _ => None,
        }
    }
}

/// How a message's params are sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ParamStructure {
    /// A JSON object.
    ByName,
    /// A JSON array.
    ByPosition,
    /// Either: an array gives the named params in order.
    Either,
}

/// What a message carries as params.
#[derive(Debug)]
pub struct Params {
    /// The named type of the params; `None` when the message takes none.
    pub schema: Option<&'static str>,
    /// Whether a frame may leave them out.
    pub optional: bool,
    /// How they are sent.
    pub structure: ParamStructure,
    /// For [`ParamStructure::Either`]: the names of the params in the order of their
    /// positions; `None` when the params are not an object of named params.
    pub names: Option<&'static [&'static str]>,
}

impl Params {
    /// The params of a frame as their schema reads them: `Ok(None)` when the frame leaves
    /// them out (and may), the named form of an "either" message's positional params, or
    /// the issue with their presence or structure (at the params' own pointer).
    pub fn read(&self, raw: Option<&Json>) -> Result<Option<Json>, ValidationIssue> {
        let issue = |message: String| ValidationIssue {
            pointer: String::new(),
            message,
        };
        let Some(_) = self.schema else {
            return match raw {
                None => Ok(None),
                Some(_) => Err(issue(
                    "must be left out: the message takes no params".to_owned(),
                )),
            };
        };
        let Some(raw) = raw else {
            return if self.optional {
                Ok(None)
            } else {
                Err(issue(
                    "are required: the message may not leave its params out".to_owned(),
                ))
            };
        };
        match (self.structure, raw) {
            (ParamStructure::ByName, Json::Object(_)) => Ok(Some(raw.clone())),
            (ParamStructure::ByName, Json::Array(_)) => Err(issue(
                "must be a JSON object (params by name), not an array".to_owned(),
            )),
            (ParamStructure::ByName, _) => {
                Err(issue("must be a JSON object (params by name)".to_owned()))
            }
            (ParamStructure::ByPosition, Json::Array(_)) => Ok(Some(raw.clone())),
            (ParamStructure::ByPosition, _) => Err(issue(
                "must be a JSON array (params by position)".to_owned(),
            )),
            (ParamStructure::Either, Json::Object(_)) => Ok(Some(raw.clone())),
            (ParamStructure::Either, Json::Array(list)) => {
                let Some(names) = self.names else {
                    return Ok(Some(raw.clone()));
                };
                if list.len() > names.len() {
                    return Err(issue(format!(
                        "has {} positions; the message takes at most {} ({})",
                        list.len(),
                        names.len(),
                        names.join(", ")
                    )));
                }
                let named = names
                    .iter()
                    .zip(list)
                    .map(|(name, value)| ((*name).to_owned(), value.clone()))
                    .collect();
                Ok(Some(Json::Object(named)))
            }
            (ParamStructure::Either, _) => Err(issue(
                "must be a JSON object (by name) or a JSON array (by position)".to_owned(),
            )),
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
    /// What the request carries as params.
    pub params: Params,
    /// The named type of the result.
    pub result: &'static str,
    /// The reasons of the registered errors the method may answer with.
    pub errors: &'static [&'static str],
    /// The named type of `error.data` of any error the method answers with, when the
    /// protocol gives one (an error's own data type comes first).
    pub error_data: Option<&'static str>,
}

/// A notification.
#[derive(Debug)]
pub struct NotificationEntry {
    /// The notification's name.
    pub name: &'static str,
    /// Who sends it.
    pub direction: Direction,
    /// What it carries as params.
    pub params: Params,
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
    /// The named type of its `error.data`, when the registry gives one.
    pub data: Option<&'static str>,
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
    /// Whether a frame may be a JSON-RPC batch.
    pub batches: bool,
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

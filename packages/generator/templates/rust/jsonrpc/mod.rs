//! turnspec's support code for generated Rust, the same in every generated crate: JSON as
//! the protocol reads it, validation plumbing, the JSON-RPC envelope and connection,
//! transports, the message and ordering checkers, and the contract testee.

pub mod check;
pub mod connection;
pub mod envelope;
pub mod json;
pub mod messages;
pub mod ordering;
pub mod pattern;
pub mod protocol;
pub mod testee;
pub mod transport;
pub mod websocket;

use std::fmt;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

pub use check::{Mode, Schema, ValidationError, ValidationIssue};
pub use connection::{after_reply, Connection, Error, RpcError};
pub use json::{Json, JsonView};
pub use protocol::{Direction, Protocol, RoundTripError};
pub use transport::Transport;

/// A member that may be absent, `null`, or a value: a field both optional and nullable,
/// where absence and `null` say different things. An absent field is left out when written.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub enum Nullable<T> {
    /// The member is not there.
    #[default]
    Absent,
    /// The member is `null`.
    Null,
    /// The member holds a value.
    Value(T),
}

impl<T> Nullable<T> {
    /// Whether the member is absent (serde's `skip_serializing_if`).
    pub fn is_absent(&self) -> bool {
        matches!(self, Nullable::Absent)
    }

    /// The value, if there is one.
    pub fn value(&self) -> Option<&T> {
        match self {
            Nullable::Value(value) => Some(value),
            _ => None,
        }
    }

    /// The value, if there is one, taking it.
    pub fn into_value(self) -> Option<T> {
        match self {
            Nullable::Value(value) => Some(value),
            _ => None,
        }
    }
}

impl<T: Serialize> Serialize for Nullable<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Nullable::Value(value) => value.serialize(serializer),
            Nullable::Absent | Nullable::Null => serializer.serialize_none(),
        }
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Nullable<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Nullable<T>, D::Error> {
        Ok(Option::<T>::deserialize(deserializer)?.map_or(Nullable::Null, Nullable::Value))
    }
}

/// What went wrong decoding JSON text into a typed value.
#[derive(Debug)]
pub enum DecodeError {
    /// The text is not JSON.
    Parse(json::ParseError),
    /// Its schema refuses the value.
    Invalid(ValidationError),
    /// The value fits its schema but not the Rust type (a message says why).
    Type(String),
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecodeError::Parse(error) => write!(f, "not JSON: {error}"),
            DecodeError::Invalid(error) => write!(f, "{error}"),
            DecodeError::Type(message) => write!(f, "does not decode: {message}"),
        }
    }
}

impl std::error::Error for DecodeError {}

/// Reads JSON text as `T`: parsed as `JSON.parse` reads it, validated in `mode`, decoded.
pub fn decode<T: DeserializeOwned + Schema>(text: &str, mode: Mode) -> Result<T, DecodeError> {
    let value = json::parse(text).map_err(DecodeError::Parse)?;
    decode_json(&value, mode)
}

/// Decodes a JSON value as `T`, validated in `mode` first.
pub fn decode_json<T: DeserializeOwned + Schema>(
    value: &Json,
    mode: Mode,
) -> Result<T, DecodeError> {
    check::validate::<T, _>(value, mode).map_err(DecodeError::Invalid)?;
    json::from_json(value).map_err(|e| DecodeError::Type(e.to_string()))
}

/// Decodes a `serde_json::Value` as `T`, validated in `mode` first.
pub fn decode_value<T: DeserializeOwned + Schema>(
    value: &serde_json::Value,
    mode: Mode,
) -> Result<T, DecodeError> {
    check::validate::<T, _>(value, mode).map_err(DecodeError::Invalid)?;
    decode_json::<T>(&Json::from(value), Mode::Tolerant)
}

/// The canonical JSON text of a value.
pub fn encode<T: Serialize + ?Sized>(value: &T) -> Result<String, json::EncodeError> {
    let value = serde_json::to_value(value).map_err(|e| json::EncodeError(e.to_string()))?;
    json::canonical(&value)
}

/// Decodes a value as `T` and writes it again as canonical JSON (what the testee's round
/// trip does).
pub fn round_trip<T: DeserializeOwned + Serialize + Schema>(
    value: &Json,
    mode: Mode,
) -> Result<String, RoundTripError> {
    let typed = decode_json::<T>(value, mode).map_err(|error| match error {
        DecodeError::Invalid(error) => RoundTripError::Invalid(error),
        other => RoundTripError::Failed(other.to_string()),
    })?;
    encode(&typed).map_err(|e| RoundTripError::Failed(e.to_string()))
}

//! The contract testee: answers the harness's commands, one JSON object per line in and one
//! per line out, with the crate's own validators, types, message checker, ordering rules
//! and canonical encoder (docs/languages.md of turnspec, "The testee protocol").
//!
//! ```text
//! {"id":1,"op":"validate","type":"T","mode":"strict","json":"…"}   → {"id":1,"valid":false,"pointers":["/a"]}
//! {"id":2,"op":"roundtrip","type":"T","mode":"tolerant","json":"…"} → {"id":2,"ok":true,"json":"<canonical>"}
//! {"id":3,"op":"encode","json":"…"}                                 → {"id":3,"json":"<canonical>"}
//! {"id":4,"op":"messages","mode":"strict","frames":["…"]}            → {"id":4,"findings":[{"frame":0,"pointer":"/params/a"}]}
//! {"id":5,"op":"ordering","frames":[{"from":"server_to_client","json":"…"}]} → {"id":5,"violations":[{"frame":1,"rule":"R"}]}
//! ```

use std::io::{self, BufRead, Write};

use super::check::{Mode, ValidationError};
use super::json::{canonical, parse, quote, Json, Text};
use super::messages::MessageChecker;
use super::ordering::OrderingChecker;
use super::protocol::{Direction, Protocol, RoundTripError};

/// Reads commands from standard input until it ends, answering each on standard output.
pub fn run(protocol: &'static Protocol) -> io::Result<()> {
    let stdin = io::stdin();
    let mut stdout = io::stdout().lock();
    for line in stdin.lock().lines() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        let answer = match parse(&line) {
            Ok(command) => {
                let id = command.get("id").cloned().unwrap_or(Json::Null);
                let mut fields = vec![("id".to_owned(), id.to_string())];
                fields.extend(answer(protocol, &command));
                fields
            }
            Err(error) => vec![
                ("id".to_owned(), "null".to_owned()),
                ("bad_command".to_owned(), text(&error.to_string())),
            ],
        };
        let members: Vec<String> = answer
            .iter()
            .map(|(k, v)| format!("{}:{v}", text(k)))
            .collect();
        writeln!(stdout, "{{{}}}", members.join(","))?;
        stdout.flush()?;
    }
    Ok(())
}

/// A JSON string literal.
fn text(value: &str) -> String {
    quote(Text::Str(value))
}

fn list(items: impl IntoIterator<Item = String>) -> String {
    format!("[{}]", items.into_iter().collect::<Vec<_>>().join(","))
}

fn sorted_pointers(error: &ValidationError) -> String {
    list(error.pointers().iter().map(|p| text(p)))
}

struct ParseFailure(String);

/// The JSON value of the text a command's member holds.
fn json_of(command: &Json, member: &str) -> Result<Json, ParseFailure> {
    read_text(command.get(member), member)
}

fn read_text(holder: Option<&Json>, what: &str) -> Result<Json, ParseFailure> {
    let Some(Json::String(source)) = holder else {
        return Err(ParseFailure(format!(
            "{what} must be a string holding JSON text"
        )));
    };
    let parsed = match source.lone_surrogate_units() {
        // JSON text is read as its code units: a lone surrogate written as such (not as an
        // escape) stays one.
        Some(units) => parse_units(units),
        None => parse(source.as_str()),
    };
    parsed.map_err(|error| ParseFailure(error.to_string()))
}

/// JSON text given as UTF-16 code units that hold a lone surrogate outside any escape: each
/// one is written as its escape before the text is read (a lone surrogate can only stand
/// inside a string).
fn parse_units(units: &[u16]) -> Result<Json, super::json::ParseError> {
    let mut escaped = String::new();
    for c in char::decode_utf16(units.iter().copied()) {
        match c {
            Ok(c) => escaped.push(c),
            Err(lone) => escaped.push_str(&format!("\\u{:04x}", lone.unpaired_surrogate())),
        }
    }
    parse(&escaped)
}

fn mode_of(command: &Json) -> Mode {
    match command.get("mode").and_then(Json::as_str) {
        Some("tolerant") => Mode::Tolerant,
        _ => Mode::Strict,
    }
}

fn answer(protocol: &'static Protocol, command: &Json) -> Vec<(String, String)> {
    let field = |name: &str, value: String| (name.to_owned(), value);
    let result = (|| -> Result<Vec<(String, String)>, ParseFailure> {
        let type_name = command
            .get("type")
            .and_then(Json::as_str)
            .unwrap_or_default();
        Ok(
            match command.get("op").and_then(Json::as_str).unwrap_or_default() {
                "hello" => vec![
                    field("language", text("rust")),
                    field("protocol", text(protocol.title)),
                ],
                "validate" => {
                    let value = json_of(command, "json")?;
                    match (protocol.validate)(type_name, &value, mode_of(command)) {
                        None => vec![field(
                            "unsupported",
                            text(&format!("no type \"{type_name}\"")),
                        )],
                        Some(Ok(())) => vec![
                            field("valid", "true".to_owned()),
                            field("pointers", "[]".to_owned()),
                        ],
                        Some(Err(error)) => vec![
                            field("valid", "false".to_owned()),
                            field("pointers", sorted_pointers(&error)),
                        ],
                    }
                }
                "roundtrip" => {
                    let value = json_of(command, "json")?;
                    match (protocol.round_trip)(type_name, &value, mode_of(command)) {
                        None => vec![field(
                            "unsupported",
                            text(&format!("no type \"{type_name}\"")),
                        )],
                        Some(Ok(json)) => {
                            vec![field("ok", "true".to_owned()), field("json", text(&json))]
                        }
                        Some(Err(RoundTripError::Invalid(error))) => {
                            vec![
                                field("ok", "false".to_owned()),
                                field("pointers", sorted_pointers(&error)),
                            ]
                        }
                        Some(Err(RoundTripError::Failed(why))) => {
                            vec![field("ok", "false".to_owned()), field("error", text(&why))]
                        }
                    }
                }
                "encode" => {
                    let value = json_of(command, "json")?;
                    match canonical(&value) {
                        Ok(json) => vec![field("json", quote(Text::Str(&json)))],
                        Err(error) => vec![field("unencodable", text(&error.to_string()))],
                    }
                }
                "messages" => {
                    let mut checker = MessageChecker::new(protocol, mode_of(command));
                    let mut findings: Vec<(usize, String)> = Vec::new();
                    for (index, frame) in frames(command).iter().enumerate() {
                        let value = read_text(Some(frame), "a frame")?;
                        for finding in checker.check(&value, index) {
                            let found = (index, finding.message_pointer());
                            if !findings.contains(&found) {
                                findings.push(found);
                            }
                        }
                    }
                    findings.sort_by(|a, b| {
                        a.0.cmp(&b.0)
                            .then_with(|| a.1.encode_utf16().cmp(b.1.encode_utf16()))
                    });
                    let items = findings.into_iter().map(|(frame, pointer)| {
                        format!("{{\"frame\":{frame},\"pointer\":{}}}", text(&pointer))
                    });
                    vec![field("findings", list(items))]
                }
                "ordering" => {
                    let mut checker = OrderingChecker::new(protocol.ordering);
                    let mut violations: Vec<String> = Vec::new();
                    for frame in frames(command) {
                        let from = frame
                            .get("from")
                            .and_then(Json::as_str)
                            .and_then(Direction::from_name)
                            .unwrap_or(Direction::ClientToServer);
                        let value = json_of(frame, "json")?;
                        for v in checker.accept(&value, from) {
                            violations.push(format!(
                                "{{\"frame\":{},\"rule\":{}}}",
                                v.frame,
                                text(v.rule)
                            ));
                        }
                    }
                    for v in checker.end(false) {
                        violations.push(format!("{{\"frame\":null,\"rule\":{}}}", text(v.rule)));
                    }
                    vec![field("violations", list(violations))]
                }
                other => vec![field(
                    "unsupported",
                    text(&format!("no command \"{other}\"")),
                )],
            },
        )
    })();
    result.unwrap_or_else(|ParseFailure(message)| vec![field("parse_error", text(&message))])
}

/// The frames of a command.
fn frames(command: &Json) -> &[Json] {
    match command.get("frames") {
        Some(Json::Array(frames)) => frames,
        _ => &[],
    }
}

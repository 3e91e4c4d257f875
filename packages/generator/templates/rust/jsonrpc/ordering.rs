//! The engine behind a protocol's ordering rules. A protocol declares its rules as data (the
//! `ordering` section of protocol.json); the generated `ordering` module lists them as
//! [`Rule`]s, and an [`OrderingChecker`] enforces them on a stream of JSON-RPC frames seen
//! from one end of a connection. The rule kinds know nothing of turns or items: each reads
//! the values that identify its scope from params by JSON pointer.
//!
//! - `precedes`: within a scope, `first` comes before every notification of `then`.
//! - `leads`: within a scope, `notification` comes at most once, and before every
//!   notification of `before`.
//! - `trails`: within a scope, `notification` comes at most once, and when it comes, no
//!   notification of `after` follows it (a scope without it is fine).
//! - `single_terminal`: a scope ends with exactly one of `terminals`; nothing of `after`
//!   follows it; a scope still open at the end of the stream is reported.
//! - `quiet_after`: after `notification`, nothing of `quiet` until a request of `until` for
//!   the same scope gets a successful response.
//! - `paired`: every `open` is followed by exactly one `close` with the same key.
//! - `sequence`: `field` of the scope's notifications, and of the items of each listed
//!   method result, goes up by exactly one each time.

use std::collections::{HashMap, HashSet};

use super::envelope::{classify, id_key, Message};
use super::json::{is_integer, quote, Json, JsonView};
use super::protocol::Direction;

/// One value that identifies a scope: what it names in messages, and where params hold it.
#[derive(Debug)]
pub struct KeyPart {
    /// What the value names, e.g. `turn`.
    pub name: &'static str,
    /// A JSON pointer into params.
    pub pointer: &'static str,
}

/// What a rule requires.
#[derive(Debug)]
pub enum RuleKind {
    /// `first` comes before every notification of `then`.
    Precedes {
        /// The notification that opens the scope.
        first: &'static str,
        /// The notifications that may only follow it.
        then: &'static [&'static str],
    },
    /// `notification` comes at most once, before every notification of `before`.
    Leads {
        /// The leading notification.
        notification: &'static str,
        /// The notifications it must precede.
        before: &'static [&'static str],
    },
    /// `notification` comes at most once, and nothing of `after` follows it.
    Trails {
        /// The trailing notification.
        notification: &'static str,
        /// The notifications that may not follow it.
        after: &'static [&'static str],
    },
    /// A scope ends with exactly one of `terminals`, and nothing of `after` follows.
    SingleTerminal {
        /// The notifications that end the scope.
        terminals: &'static [&'static str],
        /// The notifications of the scope that may not follow its terminal.
        after: &'static [&'static str],
    },
    /// After `notification`, nothing of `quiet` until a request of `until` succeeds.
    QuietAfter {
        /// The notification that starts the quiet.
        notification: &'static str,
        /// The notifications not sent during the quiet.
        quiet: &'static [&'static str],
        /// The requests whose successful response ends it.
        until: &'static [&'static str],
    },
    /// Every `open` is followed by exactly one `close` with the same key.
    Paired {
        /// What the key names in messages, e.g. `request`.
        subject: &'static str,
        /// The opening notification and where its params hold the key.
        open: (&'static str, &'static str),
        /// The closing notification and where its params hold the key.
        close: (&'static str, &'static str),
    },
    /// `field` goes up by exactly one in the scope's notifications and listed results.
    Sequence {
        /// A JSON pointer to the counter.
        field: &'static str,
        /// The notifications that carry it.
        notifications: &'static [&'static str],
        /// Method results holding an array (at the pointer) whose items carry it.
        results: &'static [(&'static str, &'static str)],
    },
}

/// An ordering rule of the protocol.
#[derive(Debug)]
pub struct Rule {
    /// The rule's id.
    pub id: &'static str,
    /// The certification requirement it belongs to.
    pub requirement: &'static str,
    /// What it says.
    pub description: &'static str,
    /// The values that identify a scope, outermost first.
    pub scope: &'static [KeyPart],
    /// What it requires.
    pub kind: RuleKind,
}

/// A frame that broke a rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// The rule's id.
    pub rule: &'static str,
    /// Its requirement.
    pub requirement: &'static str,
    /// What happened.
    pub message: String,
    /// The index of the frame (in the order given to the checker).
    pub frame: usize,
}

/// A map that iterates in the order its keys were first inserted.
#[derive(Debug)]
struct Ordered<V> {
    index: HashMap<String, usize>,
    entries: Vec<(String, Option<V>)>,
}

impl<V> Default for Ordered<V> {
    fn default() -> Self {
        Ordered {
            index: HashMap::new(),
            entries: Vec::new(),
        }
    }
}

impl<V> Ordered<V> {
    fn get(&self, key: &str) -> Option<&V> {
        self.index
            .get(key)
            .and_then(|&i| self.entries[i].1.as_ref())
    }
    fn get_mut(&mut self, key: &str) -> Option<&mut V> {
        self.index
            .get(key)
            .and_then(|&i| self.entries[i].1.as_mut())
    }
    fn contains(&self, key: &str) -> bool {
        self.get(key).is_some()
    }
    fn insert(&mut self, key: String, value: V) {
        match self.index.get(&key) {
            Some(&i) if self.entries[i].1.is_some() => self.entries[i].1 = Some(value),
            _ => {
                // A key removed and inserted again goes to the end, as in a JavaScript Map.
                self.index.insert(key.clone(), self.entries.len());
                self.entries.push((key, Some(value)));
            }
        }
    }
    fn remove(&mut self, key: &str) {
        if let Some(i) = self.index.remove(key) {
            self.entries[i].1 = None;
        }
    }
    fn values(&self) -> impl Iterator<Item = &V> {
        self.entries.iter().filter_map(|(_, v)| v.as_ref())
    }
    fn values_mut(&mut self) -> impl Iterator<Item = &mut V> {
        self.entries.iter_mut().filter_map(|(_, v)| v.as_mut())
    }
    fn iter(&self) -> impl Iterator<Item = (&String, &V)> {
        self.entries
            .iter()
            .filter_map(|(k, v)| v.as_ref().map(|v| (k, v)))
    }
}

struct Scope {
    key: String,
    label: String,
}

/// The scope a message belongs to, or `None` when params do not carry every key part.
fn scope_of(parts: &[KeyPart], params: Option<&Json>) -> Option<Scope> {
    let mut values = Vec::new();
    for part in parts {
        let value = params?.pointer(part.pointer)?;
        if !matches!(value, Json::String(_) | Json::Number(_)) {
            return None;
        }
        values.push(value);
    }
    let key = values
        .iter()
        .map(|v| id_key(v))
        .collect::<Vec<_>>()
        .join("\u{0}");
    let label = parts
        .iter()
        .zip(&values)
        .rev()
        .map(|(part, value)| format!("{} {}", part.name, show(value)))
        .collect::<Vec<_>>()
        .join(" of ");
    Some(Scope { key, label })
}

fn show(value: &Json) -> String {
    match value {
        Json::String(s) => quote(s.text()),
        other => other.to_string(),
    }
}

fn scope_id(parts: &[KeyPart]) -> String {
    parts
        .iter()
        .map(|p| p.pointer)
        .collect::<Vec<_>>()
        .join("\u{0}")
}

/// A frame where a rule looks.
#[derive(Clone, Copy, Debug)]
struct At {
    index: usize,
}

#[derive(Default)]
struct Held {
    method: String,
    label: String,
    at: Option<usize>,
}

struct Quiet {
    since: usize,
    pending: HashSet<String>,
    held: Vec<Held>,
}

struct Pair {
    scope_key: String,
    label: String,
    opened: usize,
    closed: Option<usize>,
}

/// What each rule remembers.
enum State {
    Precedes {
        opened: HashSet<String>,
    },
    Leads {
        led: HashMap<String, usize>,
        followed: HashMap<String, (String, usize)>,
    },
    Trails {
        trailed: HashMap<String, usize>,
        overtaken: HashSet<String>,
    },
    SingleTerminal {
        seen: Ordered<(String, usize)>,
        ended: HashMap<String, (String, usize)>,
    },
    QuietAfter {
        quieted: Ordered<Quiet>,
    },
    Paired {
        pairs: Ordered<Pair>,
    },
    Sequence {
        last: HashMap<String, (f64, usize)>,
    },
}

struct Pending {
    method: String,
    params: Option<Json>,
}

/// Checks a stream of frames against a protocol's ordering rules.
pub struct OrderingChecker {
    rules: &'static [Rule],
    states: Vec<State>,
    terminated: HashMap<String, HashSet<String>>,
    pending: HashMap<String, Pending>,
    index: usize,
    ended: bool,
    fresh: Vec<Violation>,
}

impl std::fmt::Debug for OrderingChecker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OrderingChecker")
            .field("rules", &self.rules.len())
            .field("frames", &self.index)
            .finish()
    }
}

impl OrderingChecker {
    /// A checker of `rules`, before any frame.
    pub fn new(rules: &'static [Rule]) -> OrderingChecker {
        let states = rules
            .iter()
            .map(|rule| match rule.kind {
                RuleKind::Precedes { .. } => State::Precedes {
                    opened: HashSet::new(),
                },
                RuleKind::Leads { .. } => State::Leads {
                    led: HashMap::new(),
                    followed: HashMap::new(),
                },
                RuleKind::Trails { .. } => State::Trails {
                    trailed: HashMap::new(),
                    overtaken: HashSet::new(),
                },
                RuleKind::SingleTerminal { .. } => State::SingleTerminal {
                    seen: Ordered::default(),
                    ended: HashMap::new(),
                },
                RuleKind::QuietAfter { .. } => State::QuietAfter {
                    quieted: Ordered::default(),
                },
                RuleKind::Paired { .. } => State::Paired {
                    pairs: Ordered::default(),
                },
                RuleKind::Sequence { .. } => State::Sequence {
                    last: HashMap::new(),
                },
            })
            .collect();
        OrderingChecker {
            rules,
            states,
            terminated: HashMap::new(),
            pending: HashMap::new(),
            index: 0,
            ended: false,
            fresh: Vec::new(),
        }
    }

    /// Feeds one frame (a message or a batch), in the order seen; `from` is who sent it.
    /// Returns the violations it made.
    pub fn accept(&mut self, frame: &Json, from: Direction) -> Vec<Violation> {
        let at = At { index: self.index };
        self.index += 1;
        match frame {
            Json::Array(items) => {
                for item in items {
                    self.one(item, from, at);
                }
            }
            message => self.one(message, from, at),
        }
        std::mem::take(&mut self.fresh)
    }

    fn report(&mut self, rule: usize, message: String, frame: usize) {
        let rule = &self.rules[rule];
        self.fresh.push(Violation {
            rule: rule.id,
            requirement: rule.requirement,
            message,
            frame,
        });
    }

    fn one(&mut self, message: &Json, from: Direction, at: At) {
        match classify(message) {
            Message::Notification { method, params } => {
                for rule in 0..self.rules.len() {
                    self.notification(rule, method, params, at);
                }
            }
            Message::Request { id, method, params } => {
                let key = format!("{} {}", from.name(), id_key(id));
                for rule in 0..self.rules.len() {
                    self.request(rule, method, params, &key);
                }
                self.pending.insert(
                    key,
                    Pending {
                        method: method.to_owned(),
                        params: params.cloned(),
                    },
                );
            }
            Message::Result { id, result } => self.response(from, id, Some(result), at),
            Message::Error { id, .. } => self.response(from, id, None, at),
            Message::Invalid { .. } => {}
        }
    }

    fn response(&mut self, from: Direction, id: &Json, result: Option<&Json>, at: At) {
        let key = format!("{} {}", from.other().name(), id_key(id));
        let Some(request) = self.pending.remove(&key) else {
            return;
        };
        for rule in 0..self.rules.len() {
            self.answered(rule, &request, &key, result, at);
        }
    }

    fn notification(&mut self, r: usize, method: &str, params: Option<&Json>, at: At) {
        let rule = &self.rules[r];
        let mut reports: Vec<String> = Vec::new();
        match (&rule.kind, &mut self.states[r]) {
            (RuleKind::Precedes { first, then }, State::Precedes { opened }) => {
                let Some(scope) = scope_of(rule.scope, params) else {
                    return;
                };
                if method == *first {
                    opened.insert(scope.key);
                } else if then.contains(&method) && !opened.contains(&scope.key) {
                    reports.push(format!(
                        "{method} for {} at frame {} came before its {first}",
                        scope.label, at.index
                    ));
                }
            }
            (
                RuleKind::Leads {
                    notification,
                    before,
                },
                State::Leads { led, followed },
            ) => {
                if method != *notification && !before.contains(&method) {
                    return;
                }
                let Some(scope) = scope_of(rule.scope, params) else {
                    return;
                };
                if method != *notification {
                    followed
                        .entry(scope.key)
                        .or_insert((method.to_owned(), at.index));
                    return;
                }
                if let Some(earlier) = led.get(&scope.key) {
                    reports.push(format!("{method} for {} at frame {} is a second one: it already came at frame {earlier}", scope.label, at.index));
                } else {
                    if let Some((other, other_at)) = followed.get(&scope.key) {
                        reports.push(format!("{method} for {} at frame {} came after {other} at frame {other_at}; it must come first", scope.label, at.index));
                    }
                    led.insert(scope.key, at.index);
                }
            }
            (
                RuleKind::Trails {
                    notification,
                    after,
                },
                State::Trails { trailed, overtaken },
            ) => {
                if method != *notification && !after.contains(&method) {
                    return;
                }
                let Some(scope) = scope_of(rule.scope, params) else {
                    return;
                };
                let earlier = trailed.get(&scope.key).copied();
                if method != *notification {
                    // One finding per scope for what follows it.
                    if let Some(earlier) = earlier {
                        if overtaken.insert(scope.key) {
                            reports.push(format!("{method} for {} at frame {} came after {notification} at frame {earlier}; {notification} must come after it", scope.label, at.index));
                        }
                    }
                } else if let Some(earlier) = earlier {
                    reports.push(format!("{method} for {} at frame {} is a second one: it already came at frame {earlier}", scope.label, at.index));
                } else {
                    trailed.insert(scope.key, at.index);
                }
            }
            (
                RuleKind::SingleTerminal { terminals, after },
                State::SingleTerminal { seen, ended },
            ) => {
                if !terminals.contains(&method) && !after.contains(&method) {
                    return;
                }
                let Some(scope) = scope_of(rule.scope, params) else {
                    return;
                };
                if !seen.contains(&scope.key) {
                    seen.insert(scope.key.clone(), (scope.label.clone(), at.index));
                }
                match ended.get(&scope.key) {
                    Some((end, end_at)) if terminals.contains(&method) => reports.push(format!(
                        "{method} for {} at frame {} is a second terminal notification: {end} at frame {end_at} already ended it",
                        scope.label, at.index
                    )),
                    Some((end, end_at)) => reports.push(format!(
                        "{method} for {} at frame {} came after {end} at frame {end_at} had ended it",
                        scope.label, at.index
                    )),
                    None if terminals.contains(&method) => {
                        ended.insert(scope.key.clone(), (method.to_owned(), at.index));
                        self.terminated.entry(scope_id(rule.scope)).or_default().insert(scope.key);
                    }
                    None => {}
                }
            }
            (
                RuleKind::QuietAfter {
                    notification,
                    quiet,
                    until,
                },
                State::QuietAfter { quieted },
            ) => {
                let Some(scope) = scope_of(rule.scope, params) else {
                    return;
                };
                let exists = quieted.contains(&scope.key);
                if let Some(state) = quieted.get_mut(&scope.key) {
                    if quiet.contains(&method) {
                        if state.pending.is_empty() {
                            reports.push(quiet_message(
                                method,
                                &scope.label,
                                at.index,
                                state.since,
                                notification,
                                until,
                            ));
                        } else {
                            state.held.push(Held {
                                method: method.to_owned(),
                                label: scope.label.clone(),
                                at: Some(at.index),
                            });
                        }
                    }
                }
                if method == *notification && !exists {
                    quieted.insert(
                        scope.key,
                        Quiet {
                            since: at.index,
                            pending: HashSet::new(),
                            held: Vec::new(),
                        },
                    );
                }
            }
            (
                RuleKind::Paired {
                    subject,
                    open,
                    close,
                },
                State::Paired { pairs },
            ) => {
                let key_of = |pointer: &str| {
                    let scope = scope_of(rule.scope, params)?;
                    let value = params?.pointer(pointer)?;
                    if !matches!(value, Json::String(_) | Json::Number(_)) {
                        return None;
                    }
                    let key = format!("{}\u{0}{}", scope.key, id_key(value));
                    Some((
                        key,
                        format!("{subject} {} of {}", show(value), scope.label),
                        scope.key,
                    ))
                };
                if method == open.0 {
                    let Some((key, label, scope_key)) = key_of(open.1) else {
                        return;
                    };
                    if let Some(pair) = pairs.get(&key) {
                        reports.push(format!("{method} for {label} at frame {} opened it a second time (first at frame {})", at.index, pair.opened));
                    } else {
                        pairs.insert(
                            key,
                            Pair {
                                scope_key,
                                label,
                                opened: at.index,
                                closed: None,
                            },
                        );
                    }
                } else if method == close.0 {
                    let Some((key, label, _)) = key_of(close.1) else {
                        return;
                    };
                    match pairs.get_mut(&key) {
                        None => reports.push(format!(
                            "{method} for {label} at frame {} came before its {}",
                            at.index, open.0
                        )),
                        Some(Pair {
                            closed: Some(first),
                            ..
                        }) => {
                            reports.push(format!("{method} for {label} at frame {} closed it a second time (first at frame {first})", at.index));
                        }
                        Some(pair) => pair.closed = Some(at.index),
                    }
                }
            }
            (
                RuleKind::Sequence {
                    field,
                    notifications,
                    ..
                },
                State::Sequence { last },
            ) => {
                if !notifications.contains(&method) {
                    return;
                }
                let Some(scope) = scope_of(rule.scope, params) else {
                    return;
                };
                let Some(value) = params
                    .and_then(|p| p.pointer(field))
                    .and_then(JsonView::number)
                    .filter(|n| is_integer(*n))
                else {
                    return;
                };
                if let Some((previous, previous_at)) = last.get(&scope.key) {
                    if value != previous + 1.0 {
                        reports.push(format!(
                            "{method} for {} at frame {} has {field} {}; expected {} after {} at frame {previous_at}",
                            scope.label,
                            at.index,
                            Json::Number(value),
                            Json::Number(previous + 1.0),
                            Json::Number(*previous)
                        ));
                    }
                }
                last.insert(scope.key, (value, at.index));
            }
            _ => unreachable!("each rule has the state of its kind"),
        }
        for message in reports {
            self.report(r, message, at.index);
        }
    }

    fn request(&mut self, r: usize, method: &str, params: Option<&Json>, key: &str) {
        let rule = &self.rules[r];
        if let (RuleKind::QuietAfter { until, .. }, State::QuietAfter { quieted }) =
            (&rule.kind, &mut self.states[r])
        {
            if !until.contains(&method) {
                return;
            }
            if let Some(scope) = scope_of(rule.scope, params) {
                if let Some(state) = quieted.get_mut(&scope.key) {
                    state.pending.insert(key.to_owned());
                }
            }
        }
    }

    fn answered(&mut self, r: usize, request: &Pending, key: &str, result: Option<&Json>, at: At) {
        let rule = &self.rules[r];
        let mut reports: Vec<(String, usize)> = Vec::new();
        match (&rule.kind, &mut self.states[r]) {
            (
                RuleKind::QuietAfter {
                    notification,
                    until,
                    ..
                },
                State::QuietAfter { quieted },
            ) => {
                if !until.contains(&request.method.as_str()) {
                    return;
                }
                let Some(scope) = scope_of(rule.scope, request.params.as_ref()) else {
                    return;
                };
                let Some(state) = quieted.get_mut(&scope.key) else {
                    return;
                };
                if !state.pending.remove(key) {
                    return;
                }
                if result.is_some() {
                    quieted.remove(&scope.key);
                } else if state.pending.is_empty() {
                    for held in std::mem::take(&mut state.held) {
                        let frame = held.at.unwrap_or(at.index);
                        reports.push((
                            quiet_message(
                                &held.method,
                                &held.label,
                                frame,
                                state.since,
                                notification,
                                until,
                            ),
                            frame,
                        ));
                    }
                }
            }
            (RuleKind::Sequence { field, results, .. }, State::Sequence { .. }) => {
                let Some(result) = result else { return };
                let Some((method, items)) = results.iter().find(|(m, _)| *m == request.method)
                else {
                    return;
                };
                let Some(Json::Array(list)) = result.pointer(items) else {
                    return;
                };
                let whose = scope_of(rule.scope, request.params.as_ref())
                    .map(|s| format!(" for {}", s.label))
                    .unwrap_or_default();
                let mut previous: Option<f64> = None;
                for (i, item) in list.iter().enumerate() {
                    let Some(value) = item
                        .pointer(field)
                        .and_then(JsonView::number)
                        .filter(|n| is_integer(*n))
                    else {
                        continue;
                    };
                    if let Some(before) = previous {
                        if value != before + 1.0 {
                            reports.push((
                                format!(
                                    "{method} result{whose} at frame {}: {items}/{i}{field} is {}; expected {} after {}",
                                    at.index,
                                    Json::Number(value),
                                    Json::Number(before + 1.0),
                                    Json::Number(before)
                                ),
                                at.index,
                            ));
                        }
                    }
                    previous = Some(value);
                }
            }
            _ => {}
        }
        for (message, frame) in reports {
            self.report(r, message, frame);
        }
    }

    /// The end of the stream: what can only be judged at the end (a scope with no terminal,
    /// a pair never closed, notifications held while a request was pending that failed).
    /// With `open_scopes_allowed`, scopes that have not reached their terminal yet (turns
    /// still running) are not reported, nor what is still open inside them. Reported once.
    pub fn end(&mut self, open_scopes_allowed: bool) -> Vec<Violation> {
        if self.ended {
            return Vec::new();
        }
        self.ended = true;
        for r in 0..self.rules.len() {
            let rule = &self.rules[r];
            let open = |scope_key: &str| {
                open_scopes_allowed
                    && !self
                        .terminated
                        .get(&scope_id(rule.scope))
                        .is_some_and(|keys| keys.contains(scope_key))
            };
            let mut reports: Vec<(String, usize)> = Vec::new();
            match (&rule.kind, &mut self.states[r]) {
                (
                    RuleKind::SingleTerminal { terminals, .. },
                    State::SingleTerminal { seen, ended },
                ) => {
                    for (key, (label, first)) in seen.iter() {
                        if ended.contains_key(key) || open(key) {
                            continue;
                        }
                        reports.push((
                            format!(
                                "{label}, first seen at frame {first}, has no terminal notification ({}) by the end of the stream",
                                terminals.join(" or ")
                            ),
                            *first,
                        ));
                    }
                }
                (
                    RuleKind::QuietAfter {
                        notification,
                        until,
                        ..
                    },
                    State::QuietAfter { quieted },
                ) => {
                    for state in quieted.values_mut() {
                        for held in std::mem::take(&mut state.held) {
                            let frame = held.at.unwrap_or(state.since);
                            reports.push((
                                quiet_message(
                                    &held.method,
                                    &held.label,
                                    frame,
                                    state.since,
                                    notification,
                                    until,
                                ),
                                frame,
                            ));
                        }
                    }
                    let _ = quieted.values().count();
                }
                (
                    RuleKind::Paired {
                        open: opening,
                        close,
                        ..
                    },
                    State::Paired { pairs },
                ) => {
                    for pair in pairs.values() {
                        if pair.closed.is_some() || open(&pair.scope_key) {
                            continue;
                        }
                        reports.push((
                            format!(
                                "{}, opened by {} at frame {}, never got its {}",
                                pair.label, opening.0, pair.opened, close.0
                            ),
                            pair.opened,
                        ));
                    }
                }
                _ => {}
            }
            for (message, frame) in reports {
                self.report(r, message, frame);
            }
        }
        std::mem::take(&mut self.fresh)
    }
}

fn quiet_message(
    method: &str,
    label: &str,
    frame: usize,
    since: usize,
    notification: &str,
    until: &[&str],
) -> String {
    format!(
        "{method} for {label} at frame {frame} came after {notification} at frame {since} and before a successful {}",
        until.join(" or ")
    )
}

//! The validation plumbing the generated validators share: where a value is ([`Path`]), what
//! a keyword found ([`Issue`]), and the verdicts in strict and tolerant mode as the TypeScript
//! validators give them (lengths in code points, patterns as ECMA-262 reads them, integers
//! within plus or minus 2^53 - 1).

use std::fmt;

use super::json::{is_integer, json_equal, Json, JsonView, Kind, Text};

/// How strictly a value is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Mode {
    /// The schemas as written: an unknown field is an error.
    #[default]
    Strict,
    /// Unknown fields are accepted and kept: a peer keeps working against a newer one.
    Tolerant,
}

impl Mode {
    /// The mode's name: `strict` or `tolerant`.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Strict => "strict",
            Mode::Tolerant => "tolerant",
        }
    }
}

/// Where a value sits inside the value being validated, built on the stack as the
/// validator descends; written as a JSON pointer only when something is wrong there.
#[derive(Clone, Copy, Debug)]
pub enum Path<'a> {
    /// The value itself.
    Root,
    /// A member of an object.
    Key(&'a Path<'a>, &'a str),
    /// An item of an array.
    Index(&'a Path<'a>, usize),
}

impl<'a> Path<'a> {
    /// The member `name` of the object here.
    pub fn key(&'a self, name: &'a str) -> Path<'a> {
        Path::Key(self, name)
    }

    /// The item `index` of the array here.
    pub fn index(&'a self, index: usize) -> Path<'a> {
        Path::Index(self, index)
    }

    /// The JSON pointer.
    pub fn pointer(&self) -> String {
        let mut out = String::new();
        self.write(&mut out);
        out
    }

    fn write(&self, out: &mut String) {
        match self {
            Path::Root => {}
            Path::Key(parent, name) => {
                parent.write(out);
                out.push('/');
                out.push_str(&escape_token(name));
            }
            Path::Index(parent, index) => {
                parent.write(out);
                out.push('/');
                out.push_str(&index.to_string());
            }
        }
    }
}

/// A JSON pointer token: `~` as `~0`, `/` as `~1`.
pub fn escape_token(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

/// What one keyword found: where it was read (`path`), the keyword, the pointer reported
/// (a missing or unknown member's own place for `required` and `additionalProperties`)
/// and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Issue {
    /// The pointer of the value the keyword was read at.
    pub path: String,
    /// The JSON Schema keyword.
    pub keyword: &'static str,
    /// The pointer of the value that is wrong.
    pub pointer: String,
    /// What is wrong, e.g. `must be at most 200`.
    pub message: String,
}

/// One finding of a validation: the JSON pointer of the failing value and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ValidationIssue {
    /// The JSON pointer of the failing value (`""` is the value itself).
    pub pointer: String,
    /// What is wrong there.
    pub message: String,
}

impl fmt::Display for ValidationIssue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let place = if self.pointer.is_empty() {
            "(value)"
        } else {
            &self.pointer
        };
        write!(f, "{place}: {}", self.message)
    }
}

/// A value that its schema refuses, with every issue found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ValidationError {
    /// The named type the value was checked as.
    pub type_name: String,
    /// Every issue, in the order found.
    pub issues: Vec<ValidationIssue>,
}

impl ValidationError {
    /// The pointers of the issues, sorted by UTF-16 code units, each once.
    pub fn pointers(&self) -> Vec<String> {
        let mut pointers: Vec<String> = self.issues.iter().map(|i| i.pointer.clone()).collect();
        pointers.sort_by(|a, b| a.encode_utf16().cmp(b.encode_utf16()));
        pointers.dedup();
        pointers
    }
}

impl fmt::Display for ValidationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "not a valid {}: ", self.type_name)?;
        for (i, issue) in self.issues.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            write!(f, "{issue}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ValidationError {}

/// A named type of the protocol and its check, generated from its schema.
pub trait Schema {
    /// The type's name in the schemas.
    const NAME: &'static str;

    /// Appends to `e` what `v` breaks; `closed` is false in tolerant mode.
    fn check<V: JsonView>(v: &V, p: &Path<'_>, e: &mut Vec<Issue>, closed: bool);
}

/// Validates `value` as `T` in `mode`: every issue, as the TypeScript validators report them.
pub fn validate<T: Schema, V: JsonView>(value: &V, mode: Mode) -> Result<(), ValidationError> {
    let issues = run_check(T::check::<V>, value, mode);
    if issues.is_empty() {
        Ok(())
    } else {
        Err(ValidationError {
            type_name: T::NAME.to_owned(),
            issues,
        })
    }
}

/// Whether `value` is a valid `T` in `mode`.
pub fn is_valid<T: Schema, V: JsonView>(value: &V, mode: Mode) -> bool {
    let mut found = Vec::new();
    T::check(value, &Path::Root, &mut found, mode == Mode::Strict);
    found.is_empty()
}

/// Runs a check in `mode` and reports its issues as the TypeScript validators do: in
/// tolerant mode, what the strict check finds minus what tolerance accepts.
pub fn run_check<V: JsonView>(
    check: impl Fn(&V, &Path<'_>, &mut Vec<Issue>, bool),
    value: &V,
    mode: Mode,
) -> Vec<ValidationIssue> {
    let mut found = Vec::new();
    check(value, &Path::Root, &mut found, mode == Mode::Strict);
    if found.is_empty() {
        return Vec::new();
    }
    if mode == Mode::Strict {
        return reported(&found);
    }
    let mut strict = Vec::new();
    check(value, &Path::Root, &mut strict, true);
    let kept = reported(&tolerated(&strict));
    if kept.is_empty() {
        reported(&found)
    } else {
        kept
    }
}

/// What tolerant mode keeps of a strict report: no unknown fields, and no union failure
/// caused by them alone.
fn tolerated(issues: &[Issue]) -> Vec<Issue> {
    let below = |outer: &Issue, other: &Issue| {
        other.path == outer.path
            || other
                .path
                .strip_prefix(outer.path.as_str())
                .is_some_and(|rest| rest.starts_with('/'))
    };
    issues
        .iter()
        .enumerate()
        .filter(|(i, issue)| {
            if issue.keyword == "additionalProperties" {
                return false;
            }
            if issue.keyword != "anyOf" && issue.keyword != "oneOf" {
                return true;
            }
            let mut under = issues
                .iter()
                .enumerate()
                .filter(|(j, o)| j != i && below(issue, o))
                .peekable();
            under.peek().is_none()
                || under.any(|(_, o)| {
                    o.keyword != "additionalProperties"
                        && !(o.keyword == "type" && o.path == issue.path)
                })
        })
        .map(|(_, issue)| issue.clone())
        .collect()
}

fn reported(issues: &[Issue]) -> Vec<ValidationIssue> {
    // A discriminator's own issue repeats what the tag's check says better.
    let mut out: Vec<ValidationIssue> = Vec::new();
    for issue in issues {
        if issue.keyword == "discriminator" && issues.len() > 1 {
            continue;
        }
        if !out
            .iter()
            .any(|o| o.pointer == issue.pointer && o.message == issue.message)
        {
            out.push(ValidationIssue {
                pointer: issue.pointer.clone(),
                message: issue.message.clone(),
            });
        }
    }
    out
}

// The helpers the generated checks call, one per kind of finding.

/// Records that the value at `p` breaks `keyword`.
pub fn fail(e: &mut Vec<Issue>, p: &Path<'_>, keyword: &'static str, message: impl Into<String>) {
    let path = p.pointer();
    e.push(Issue {
        pointer: path.clone(),
        path,
        keyword,
        message: message.into(),
    });
}

/// Records that the member `name` of the object at `p` breaks `keyword` (missing or unknown).
pub fn fail_member(
    e: &mut Vec<Issue>,
    p: &Path<'_>,
    keyword: &'static str,
    name: &str,
    message: &str,
) {
    let path = p.pointer();
    let pointer = format!("{path}/{}", escape_token(name));
    e.push(Issue {
        path,
        keyword,
        pointer,
        message: message.to_owned(),
    });
}

/// A `required` keyword: each name must be a member of the object `v`.
pub fn require<V: JsonView>(v: &V, p: &Path<'_>, e: &mut Vec<Issue>, names: &[&str]) {
    for name in names {
        if v.member(name).is_none() {
            fail_member(e, p, "required", name, "is required");
        }
    }
}

/// `additionalProperties: false` in strict mode: every member must be one of `known`.
pub fn closed_members<V: JsonView>(v: &V, p: &Path<'_>, e: &mut Vec<Issue>, known: &[&str]) {
    for (name, _) in v.members().into_iter().flatten() {
        if !known.contains(&name) {
            fail_member(e, p, "additionalProperties", name, "is not a known field");
        }
    }
}

/// Whether the value is a string.
pub fn is_string<V: JsonView>(v: &V) -> bool {
    v.kind() == Kind::String
}

/// Whether the value is a finite number (JSON Schema's `number`).
pub fn is_number<V: JsonView>(v: &V) -> bool {
    v.number().is_some_and(f64::is_finite)
}

/// Whether the value is an integer (JSON Schema's `integer`: `1.0` is one).
pub fn is_int<V: JsonView>(v: &V) -> bool {
    v.number().is_some_and(is_integer)
}

/// Whether the value is a string equal to one of `values`.
pub fn is_one_of_str<V: JsonView>(v: &V, values: &[&str]) -> bool {
    v.text()
        .is_some_and(|t| values.iter().any(|value| t.is(value)))
}

/// Whether the value is a number equal to one of `values`.
pub fn is_one_of_number<V: JsonView>(v: &V, values: &[f64]) -> bool {
    v.number().is_some_and(|n| values.contains(&n))
}

/// Whether the value equals one of `values` (JSON equality).
pub fn is_one_of<V: JsonView>(v: &V, values: &[Json]) -> bool {
    values.iter().any(|value| json_equal(v, value))
}

/// The length of a string in characters (code points), as JSON Schema counts it.
pub fn length(text: Text<'_>) -> usize {
    text.count()
}

/// Whether `n` is a multiple of `of`, as ajv decides it.
pub fn is_multiple_of(n: f64, of: f64) -> bool {
    let quotient = n / of;
    quotient.is_finite() && quotient.fract() == 0.0
}

/// Whether two array items are equal (for `uniqueItems`).
pub fn has_duplicates<V: JsonView>(items: &[V]) -> bool {
    items
        .iter()
        .enumerate()
        .any(|(i, a)| items[i + 1..].iter().any(|b| json_equal(a, b)))
}

/// The JSON type of a value and whether it is an integer, for messages.
pub fn type_name<V: JsonView>(v: &V) -> &'static str {
    match v.kind() {
        Kind::Number if is_int(v) => "integer",
        kind => kind.name(),
    }
}

/// The values of an `enum` or `const` that are not all strings or all numbers, from their
/// JSON text (written by the generator).
pub fn literal(text: &str) -> Vec<Json> {
    match super::json::parse(text) {
        Ok(Json::Array(values)) => values,
        _ => panic!("the generator wrote a JSON array of values: {text}"),
    }
}

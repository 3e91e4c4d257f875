//! JSON Schema's `pattern` as ECMA-262 reads it (with the `u` flag): a backtracking matcher
//! over code points, searching anywhere in the string unless the pattern anchors itself.
//! The generator translates each pattern of the schemas into [`Node`]s: `.` matches any
//! code point but the four line terminators, `$` only the very end (never before a final
//! newline), `\d`, `\w` and `\b` are ASCII and `\s` is ECMA-262's set, all spelled out as
//! ranges. What cannot be read exactly this way (back references, lookbehind, Unicode
//! property escapes) is refused when the code is generated.

use super::json::Text;

/// One element of a pattern.
#[derive(Debug)]
pub enum Node {
    /// `^`: the start of the string.
    Start,
    /// `$`: the end of the string.
    End,
    /// `\b` (true) or `\B` (false).
    WordBoundary(bool),
    /// One code point.
    Char(u32),
    /// `.`: any code point but `\n`, `\r`, U+2028 and U+2029.
    Any,
    /// A character class as sorted, inclusive ranges of code points (a negated class is
    /// written as the ranges it allows).
    Class(&'static [(u32, u32)]),
    /// A group: its alternatives, the first that lets the rest match wins.
    Group(&'static [&'static [Node]]),
    /// A quantified node: at least `min`, at most `max` (`u32::MAX` for no limit) times,
    /// greedy or lazy.
    Repeat(&'static Node, u32, u32, bool),
    /// A lookahead: its alternatives, and whether it is negative.
    Look(&'static [&'static [Node]], bool),
}

/// A pattern: its source, for messages, and its alternatives.
#[derive(Debug)]
pub struct Pattern {
    /// The pattern as the schema writes it.
    pub source: &'static str,
    /// The top-level alternatives.
    pub alternatives: &'static [&'static [Node]],
}

impl Pattern {
    /// Whether the pattern matches somewhere in `text`.
    pub fn is_match(&self, text: Text<'_>) -> bool {
        let points = text.code_points();
        (0..=points.len()).any(|start| {
            self.alternatives
                .iter()
                .any(|alternative| sequence(alternative, &points, start, &mut |_| true))
        })
    }
}

type Next<'k> = &'k mut dyn FnMut(usize) -> bool;

fn sequence(nodes: &[Node], points: &[u32], at: usize, next: Next<'_>) -> bool {
    match nodes.split_first() {
        None => next(at),
        Some((node, rest)) => one(node, points, at, &mut |after| {
            sequence(rest, points, after, next)
        }),
    }
}

fn is_word(point: Option<&u32>) -> bool {
    point.is_some_and(|&c| matches!(c, 0x30..=0x39 | 0x41..=0x5a | 0x61..=0x7a | 0x5f))
}

fn single(node: &Node, point: u32) -> Option<bool> {
    match node {
        Node::Char(c) => Some(*c == point),
        Node::Any => Some(!matches!(point, 0x0a | 0x0d | 0x2028 | 0x2029)),
        Node::Class(ranges) => Some(
            ranges
                .iter()
                .any(|&(low, high)| low <= point && point <= high),
        ),
        _ => None,
    }
}

fn one(node: &Node, points: &[u32], at: usize, next: Next<'_>) -> bool {
    match node {
        Node::Start => at == 0 && next(at),
        Node::End => at == points.len() && next(at),
        Node::WordBoundary(wanted) => {
            let boundary =
                is_word(at.checked_sub(1).and_then(|i| points.get(i))) != is_word(points.get(at));
            boundary == *wanted && next(at)
        }
        Node::Char(_) | Node::Any | Node::Class(_) => {
            points
                .get(at)
                .is_some_and(|&point| single(node, point) == Some(true))
                && next(at + 1)
        }
        Node::Group(alternatives) => alternatives
            .iter()
            .any(|alternative| sequence(alternative, points, at, next)),
        Node::Look(alternatives, negative) => {
            let found = alternatives
                .iter()
                .any(|alternative| sequence(alternative, points, at, &mut |_| true));
            found != *negative && next(at)
        }
        Node::Repeat(inner, min, max, greedy) => {
            if let Node::Char(_) | Node::Any | Node::Class(_) = inner {
                repeat_single(inner, *min, *max, *greedy, points, at, next)
            } else {
                repeat(inner, *min, *max, *greedy, points, at, 0, next)
            }
        }
    }
}

/// A quantified single code point: counted in a loop, then the rest tried from each count,
/// so that a long string does not mean deep recursion.
fn repeat_single(
    node: &Node,
    min: u32,
    max: u32,
    greedy: bool,
    points: &[u32],
    at: usize,
    next: Next<'_>,
) -> bool {
    let limit = usize::try_from(max).unwrap_or(usize::MAX);
    let mut count = 0;
    while count < limit
        && points
            .get(at + count)
            .is_some_and(|&p| single(node, p) == Some(true))
    {
        count += 1;
    }
    let low = usize::try_from(min).unwrap_or(usize::MAX);
    if count < low {
        return false;
    }
    if greedy {
        (low..=count).rev().any(|n| next(at + n))
    } else {
        (low..=count).any(|n| next(at + n))
    }
}

#[allow(clippy::too_many_arguments)]
fn repeat(
    node: &Node,
    min: u32,
    max: u32,
    greedy: bool,
    points: &[u32],
    at: usize,
    count: u32,
    next: Next<'_>,
) -> bool {
    let more = |next: Next<'_>| {
        count < max
            && one(node, points, at, &mut |after| {
                // ECMA-262: an iteration past the minimum that matches nothing ends the loop.
                if after == at && count >= min {
                    return false;
                }
                repeat(node, min, max, greedy, points, after, count + 1, next)
            })
    };
    if count < min {
        return more(next);
    }
    if !greedy && next(at) {
        return true;
    }
    more(next) || (greedy && next(at))
}

#[cfg(test)]
mod tests {
    use super::*;

    static NAME: Pattern = Pattern {
        source: "^[A-Za-z_][A-Za-z0-9_]*$",
        alternatives: &[&[
            Node::Start,
            Node::Class(&[(0x41, 0x5a), (0x5f, 0x5f), (0x61, 0x7a)]),
            Node::Repeat(
                &Node::Class(&[(0x30, 0x39), (0x41, 0x5a), (0x5f, 0x5f), (0x61, 0x7a)]),
                0,
                u32::MAX,
                true,
            ),
            Node::End,
        ]],
    };

    static GROUPED: Pattern = Pattern {
        source: "a(b|bc)+d",
        alternatives: &[&[
            Node::Char(0x61),
            Node::Repeat(
                &Node::Group(&[&[Node::Char(0x62)], &[Node::Char(0x62), Node::Char(0x63)]]),
                1,
                u32::MAX,
                true,
            ),
            Node::Char(0x64),
        ]],
    };

    #[test]
    fn anchors_and_classes() {
        assert!(NAME.is_match(Text::Str("snake_case1")));
        assert!(!NAME.is_match(Text::Str("1abc")));
        assert!(!NAME.is_match(Text::Str("abc\n")));
        assert!(GROUPED.is_match(Text::Str("xxabcbd")));
        assert!(!GROUPED.is_match(Text::Str("abce")));
    }
}

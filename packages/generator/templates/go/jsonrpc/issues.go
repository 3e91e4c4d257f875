package jsonrpc

import (
	"fmt"
	"strings"
)

// Issue is one thing wrong with a value: where (a JSON pointer into it, "" for the value
// itself), what, what was expected and what was received (Absent when nothing was there).
type Issue struct {
	Pointer  string `json:"pointer"`
	Message  string `json:"message"`
	Expected Value  `json:"expected"`
	Received Value  `json:"received"`
}

// MarshalJSON writes the issue as the JSON-RPC error data of an invalid request carries it.
func (i Issue) MarshalJSON() ([]byte, error) {
	members := []Member{{"pointer", StringValue(i.Pointer)}, {"message", StringValue(i.Message)}}
	if !i.Expected.IsAbsent() {
		members = append(members, Member{"expected", i.Expected})
	}
	if !i.Received.IsAbsent() {
		members = append(members, Member{"received", i.Received})
	}
	return Canonical(ObjectValue(members...))
}

// String is the issue on one line: `path/to/field: message; got "value"`.
func (i Issue) String() string { return FormatIssue(i, "") }

// ValidationError is a value its schema refuses, with every issue found.
type ValidationError struct {
	// Type is the named type the value was checked as.
	Type   string
	Issues []Issue
}

func (e *ValidationError) Error() string {
	parts := make([]string, len(e.Issues))
	for i, issue := range e.Issues {
		parts[i] = FormatIssue(issue, "")
	}
	return fmt.Sprintf("not a valid %s: %s", e.Type, strings.Join(parts, "; "))
}

// Validate checks v with a generated validator in the given mode and returns nil when it is
// valid, or a *ValidationError listing every issue: the run stops at the first error, and
// only a value that fails is checked again to list them all (strictly, minus what tolerant
// mode accepts).
func Validate(typeName string, check func(*Checker, *Value) bool, v *Value, mode Mode) error {
	fast := Checker{tolerant: mode == Tolerant}
	if check(&fast, v) {
		return nil
	}
	report := Checker{all: true}
	if !check(&report, v) {
		errs := report.errs
		if mode == Tolerant {
			errs = tolerated(errs)
		}
		if issues := toIssues(errs, v); len(issues) > 0 {
			return &ValidationError{Type: typeName, Issues: issues}
		}
	}
	return &ValidationError{Type: typeName, Issues: toIssues(fast.errs, v)}
}

// Valid reports whether v passes check in the given mode, building no issue.
func Valid(check func(*Checker, *Value) bool, v *Value, mode Mode) bool {
	c := Checker{tolerant: mode == Tolerant}
	return check(&c, v)
}

// tolerated drops what tolerant mode accepts from a strict report: unknown members, and a
// union failure whose only causes below it were unknown members.
func tolerated(errs []RawError) []RawError {
	var out []RawError
	for i, e := range errs {
		if e.Keyword == "additionalProperties" {
			continue
		}
		if e.Keyword != "anyOf" && e.Keyword != "oneOf" {
			out = append(out, e)
			continue
		}
		below, real := 0, false
		for j, o := range errs {
			if j == i || (o.Path != e.Path && !strings.HasPrefix(o.Path, e.Path+"/")) {
				continue
			}
			below++
			if o.Keyword != "additionalProperties" && !(o.Keyword == "type" && o.Path == e.Path) {
				real = true
			}
		}
		if below == 0 || real {
			out = append(out, e)
		}
	}
	return out
}

// toIssues turns errors into issues, reading what was received from root. A failing union
// also reports its branches' errors at the same place; the union's own issue says it
// better, so branch errors at exactly that place are dropped.
func toIssues(errs []RawError, root *Value) []Issue {
	unions := map[string]bool{}
	for _, e := range errs {
		if e.Keyword == "anyOf" || e.Keyword == "oneOf" {
			unions[e.Path] = true
		}
	}
	seen := map[string]bool{}
	issues := []Issue{}
	for _, e := range errs {
		// The tag's own check reports a bad tag better than the dispatch on it does.
		if e.Keyword == "discriminator" && len(errs) > 1 {
			continue
		}
		issue := toIssue(e, root)
		if e.Keyword != "anyOf" && e.Keyword != "oneOf" && unions[issue.Pointer] && e.Path == issue.Pointer {
			continue
		}
		key := issue.Pointer + "\x00" + issue.Message
		if seen[key] {
			continue
		}
		seen[key] = true
		issues = append(issues, issue)
	}
	return issues
}

// ReceivedLimit is the most characters of a received string an issue keeps: an error must
// not send a huge value back to whoever sent it.
const ReceivedLimit = 256

func withReceived(issue Issue, root *Value) Issue {
	received, ok := ValueAt(root, issue.Pointer)
	if !ok {
		return issue
	}
	if received.kind == String {
		if n := CodeUnits(received.text); n > ReceivedLimit {
			received = StringValue(fmt.Sprintf("%s… (%d characters, cut)", firstUnits(received.text, ReceivedLimit), n))
		}
	}
	issue.Received = received
	return issue
}

// firstUnits is the first n UTF-16 code units of s (a pair cut in two leaves its high half).
func firstUnits(s string, n int) string {
	var b []byte
	count := 0
	units(s, func(u uint16) bool {
		if count == n {
			return false
		}
		count++
		b = appendUnit(b, u)
		return true
	})
	// Pairs split by appendUnit are joined again.
	v, err := Parse(AppendString(nil, string(b)))
	if err != nil {
		return string(b)
	}
	return v.text
}

// ValueAt is the value at a JSON pointer into root, and whether there is one.
func ValueAt(root *Value, pointer string) (Value, bool) {
	if pointer == "" {
		return *root, true
	}
	current := *root
	for _, raw := range strings.Split(pointer[1:], "/") {
		token := UnescapeToken(raw)
		switch current.kind {
		case Object:
			next := current.Lookup(token)
			if next == nil {
				return Value{}, false
			}
			current = *next
		case Array:
			if token == "length" {
				current = IntValue(int64(len(current.items)))
				continue
			}
			i, ok := arrayIndex(token)
			if !ok || int(i) >= len(current.items) {
				return Value{}, false
			}
			current = current.items[i]
		default:
			return Value{}, false
		}
	}
	return current, true
}

func plural(n float64, one string) string {
	if n == 1 {
		return FormatNumber(n) + " " + one
	}
	return FormatNumber(n) + " " + one + "s"
}

// limitText is how each bound reads, given its limit.
func limitText(keyword string, n float64) string {
	switch keyword {
	case "maximum":
		return "be at most " + FormatNumber(n)
	case "minimum":
		return "be at least " + FormatNumber(n)
	case "exclusiveMaximum":
		return "be less than " + FormatNumber(n)
	case "exclusiveMinimum":
		return "be greater than " + FormatNumber(n)
	case "maxLength":
		return "be at most " + plural(n, "character") + " long"
	case "minLength":
		return "be at least " + plural(n, "character") + " long"
	case "maxItems":
		return "have at most " + plural(n, "item")
	case "minItems":
		return "have at least " + plural(n, "item")
	case "maxProperties":
		return "have at most " + plural(n, "field")
	case "minProperties":
		return "have at least " + plural(n, "field")
	case "multipleOf":
		return "be a multiple of " + FormatNumber(n)
	}
	return keyword + " " + FormatNumber(n)
}

func listText(values []Value) string {
	parts := make([]string, len(values))
	for i, v := range values {
		if v.kind == String {
			parts[i] = v.text
		} else {
			parts[i] = v.String()
		}
	}
	return strings.Join(parts, ", ")
}

func toIssue(e RawError, root *Value) Issue {
	at := e.Path
	switch e.Keyword {
	case "required":
		return Issue{Pointer: at + "/" + EscapeToken(e.Name), Message: "is required", Expected: StringValue("a value")}
	case "additionalProperties":
		return withReceived(Issue{Pointer: at + "/" + EscapeToken(e.Name), Message: "is not a known field", Expected: StringValue("no such field")}, root)
	case "enum":
		return withReceived(Issue{Pointer: at, Message: "must be one of " + listText(e.Allowed), Expected: ArrayValue(e.Allowed...)}, root)
	case "const":
		return withReceived(Issue{Pointer: at, Message: "must be " + e.Allowed[0].String(), Expected: e.Allowed[0]}, root)
	case "type":
		expected := StringValue(strings.Join(e.Types, ","))
		if len(e.Types) > 1 {
			items := make([]Value, len(e.Types))
			for i, t := range e.Types {
				items[i] = StringValue(t)
			}
			expected = ArrayValue(items...)
		}
		return withReceived(Issue{Pointer: at, Message: "must be " + strings.Replace(strings.Join(e.Types, ","), ",", " or ", 1), Expected: expected}, root)
	case "discriminator":
		return withReceived(Issue{Pointer: at + "/" + EscapeToken(jsString(e.Tag)), Message: "must name a known variant"}, root)
	case "anyOf", "oneOf":
		return withReceived(Issue{Pointer: at, Message: "does not match any allowed shape"}, root)
	case "maximum", "minimum", "exclusiveMaximum", "exclusiveMinimum", "maxLength", "minLength", "maxItems", "minItems", "maxProperties", "minProperties", "multipleOf":
		return withReceived(Issue{Pointer: at, Message: "must " + limitText(e.Keyword, e.Limit), Expected: NumberValue(e.Limit)}, root)
	case "pattern":
		return withReceived(Issue{Pointer: at, Message: "must match the pattern " + e.Name, Expected: StringValue(e.Name)}, root)
	case "items":
		return withReceived(Issue{Pointer: at, Message: "fails items", Expected: NumberValue(e.Limit)}, root)
	}
	return withReceived(Issue{Pointer: at, Message: "fails " + e.Keyword}, root)
}

// FormatIssue writes an issue on one line, `path/to/field: message; got "value"`, its path
// prefixed by prefix (e.g. "params").
func FormatIssue(issue Issue, prefix string) string {
	path := strings.TrimPrefix(prefix+issue.Pointer, "/")
	if path == "" {
		path = "(value)"
	}
	got := ""
	if !issue.Received.IsAbsent() {
		got = "; got " + Preview(issue.Received, 120)
	}
	return path + ": " + issue.Message + got
}

// Preview is a short JSON rendering of a value, so that one huge value cannot flood a report.
func Preview(v Value, limit int) string {
	text := v.String()
	if CodeUnits(text) <= limit {
		return text
	}
	return firstUnits(text, limit-1) + "…"
}

// formatIssues joins issues on one line, each prefixed by prefix.
func formatIssues(issues []Issue, prefix string) string {
	parts := make([]string, len(issues))
	for i, issue := range issues {
		parts[i] = FormatIssue(issue, prefix)
	}
	return strings.Join(parts, "; ")
}

// jsString is a value as JavaScript's String() writes it.
func jsString(v Value) string {
	switch v.kind {
	case Absent:
		return "undefined"
	case String:
		return v.text
	case Number:
		return FormatNumber(v.number)
	case Array:
		parts := make([]string, len(v.items))
		for i, item := range v.items {
			if item.kind != Null {
				parts[i] = jsString(item)
			}
		}
		return strings.Join(parts, ",")
	case Object:
		return "[object Object]"
	}
	return v.String()
}

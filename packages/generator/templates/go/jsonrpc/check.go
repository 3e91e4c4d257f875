package jsonrpc

import (
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Mode is how strictly a value is read.
type Mode uint8

const (
	// Strict refuses unknown fields and enum values: certification, a gateway's own input.
	Strict Mode = iota
	// Tolerant accepts unknown fields (and keeps them), so that a client keeps working
	// against a newer peer.
	Tolerant
)

func (m Mode) String() string {
	if m == Tolerant {
		return "tolerant"
	}
	return "strict"
}

// RawError is one failed keyword, as the generated validators report it: the keyword, the
// JSON pointer of the value it failed on and what the keyword needed. Issues (see Issue)
// are made from them.
type RawError struct {
	Keyword string
	// Path is the JSON pointer of the value the keyword failed on.
	Path string
	// Name is the missing or unknown member (required, additionalProperties), the property
	// name (propertyNames), the pattern (pattern) or the tag name (discriminator).
	Name string
	// Types are the types the value must have (type).
	Types []string
	// Limit is the bound (maximum, minLength, maxItems, items, …).
	Limit float64
	// Allowed are the values allowed (enum; const holds one).
	Allowed []Value
	// Tag is the tag found (discriminator); absent when there was none.
	Tag Value
}

type segment struct {
	key   string
	index int // -1 for a member name
}

// Checker carries one validation run through the generated validators: whether every
// error is collected or the run stops at the first, strict or tolerant, the errors so far
// and the place being checked. The generated code calls its methods; use Validate.
//
// Each method that reports an error returns whether checking stops there: it stops at the
// first error unless every error is collected, as JSON Schema validators do.
type Checker struct {
	all       bool
	tolerant  bool
	composite int
	errs      []RawError
	path      []segment
}

// NewChecker starts a run: all collects every error (a report), tolerant reads the
// schemas with their objects open.
func NewChecker(all, tolerant bool) *Checker {
	return &Checker{all: all, tolerant: tolerant}
}

// All reports whether every error is collected.
func (c *Checker) All() bool { return c.all }

// Tolerant reports whether unknown members are accepted.
func (c *Checker) Tolerant() bool { return c.tolerant }

// Errors are the errors reported so far.
func (c *Checker) Errors() []RawError { return c.errs }

// Mark is the number of errors so far, to tell whether a part of the value added any.
func (c *Checker) Mark() int { return len(c.errs) }

// Reset drops the errors reported after mark (a union branch that was not taken).
func (c *Checker) Reset(mark int) { c.errs = c.errs[:mark] }

// Since reports whether checking stops because an error was reported after mark.
func (c *Checker) Since(mark int) bool { return !c.all && len(c.errs) > mark }

// Enter moves the place being checked to the member key of the current value.
func (c *Checker) Enter(key string) { c.path = append(c.path, segment{key: key, index: -1}) }

// EnterIndex moves the place being checked to item i of the current array.
func (c *Checker) EnterIndex(i int) { c.path = append(c.path, segment{index: i}) }

// Leave moves the place back to the value that holds it.
func (c *Checker) Leave() { c.path = c.path[:len(c.path)-1] }

// BeginBranch starts checking one branch of a union: its errors do not stop the run.
func (c *Checker) BeginBranch() { c.composite++ }

// EndBranch ends a branch started by BeginBranch.
func (c *Checker) EndBranch() { c.composite-- }

// Quietly reports whether v passes check, reporting nothing (for "not").
func (c *Checker) Quietly(v *Value, check func(*Checker, *Value) bool) bool {
	all, mark := c.all, len(c.errs)
	c.all = false
	c.composite++
	ok := check(c, v)
	c.composite--
	c.all = all
	c.errs = c.errs[:mark]
	return ok
}

// Pointer is the JSON pointer of the place being checked.
func (c *Checker) Pointer() string {
	if len(c.path) == 0 {
		return ""
	}
	var b strings.Builder
	for _, s := range c.path {
		b.WriteByte('/')
		if s.index >= 0 {
			b.WriteString(strconv.Itoa(s.index))
		} else {
			b.WriteString(EscapeToken(s.key))
		}
	}
	return b.String()
}

func (c *Checker) report(e RawError) bool {
	e.Path = c.Pointer()
	c.errs = append(c.errs, e)
	return !c.all
}

// Type reports a value of another type than types. Inside a union branch the keywords
// that apply to a value of any type are still read after it (as JSON Schema validators do
// when they stop at the first error), so it stops the run only outside one.
func (c *Checker) Type(types ...string) bool {
	c.report(RawError{Keyword: "type", Types: types})
	return !c.all && c.composite == 0
}

// Missing reports a required member that is not there.
func (c *Checker) Missing(name string) bool {
	return c.report(RawError{Keyword: "required", Name: name})
}

// Unknown reports a member the object does not declare.
func (c *Checker) Unknown(name string) bool {
	return c.report(RawError{Keyword: "additionalProperties", Name: name})
}

// NotIn reports a value that is none of allowed.
func (c *Checker) NotIn(allowed []Value) bool {
	return c.report(RawError{Keyword: "enum", Allowed: allowed})
}

// NotConst reports a value other than the one allowed.
func (c *Checker) NotConst(allowed Value) bool {
	return c.report(RawError{Keyword: "const", Allowed: []Value{allowed}})
}

// Bound reports a value beyond the bound of keyword (maximum, minLength, maxItems, …).
func (c *Checker) Bound(keyword string, limit float64) bool {
	return c.report(RawError{Keyword: keyword, Limit: limit})
}

// NoMatch reports a string the pattern does not match.
func (c *Checker) NoMatch(pattern string) bool {
	return c.report(RawError{Keyword: "pattern", Name: pattern})
}

// NoBranch reports a value that matches no branch of a union (keyword anyOf), or none or
// more than one (oneOf). Branch errors reported since the union began stay.
func (c *Checker) NoBranch(keyword string) bool {
	c.errs = append(c.errs, RawError{Keyword: keyword, Path: c.Pointer()})
	return !c.all
}

// BadTag reports a tagged union's tag that is missing, not a string or names no variant.
func (c *Checker) BadTag(tagName string, tag Value) bool {
	return c.report(RawError{Keyword: "discriminator", Name: tagName, Tag: tag})
}

// BadName reports a member name its schema refuses.
func (c *Checker) BadName(name string) bool {
	c.errs = append(c.errs, RawError{Keyword: "propertyNames", Path: c.Pointer(), Name: name})
	return !c.all
}

// TooManyItems reports an array longer than its tuple allows.
func (c *Checker) TooManyItems(limit int) bool {
	return c.report(RawError{Keyword: "items", Limit: float64(limit)})
}

// Matched reports a value that matches the schema it must not match.
func (c *Checker) Matched() bool {
	return c.report(RawError{Keyword: "not"})
}

// Never reports a value where the schema allows none.
func (c *Checker) Never() bool {
	return c.report(RawError{Keyword: "false schema"})
}

// Length is the length of s as its schema counts it: in code points.
func Length(s string) int {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return CodePoints(s)
		}
	}
	return len(s)
}

// ForPattern is s as a pattern is matched on it: a lone surrogate reads as U+FFFD (no
// pattern the generator translates can tell them apart, see the generated code).
func ForPattern(s string) string {
	if !strings.Contains(s, "\xED") {
		return s
	}
	var b []byte
	for i := 0; i < len(s); {
		if _, ok := surrogateAt(s, i); ok {
			b = utf8.AppendRune(b, utf8.RuneError)
			i += 3
			continue
		}
		b = append(b, s[i])
		i++
	}
	return string(b)
}

// EscapeToken escapes a member name as a JSON pointer token (~ as ~0, / as ~1).
func EscapeToken(key string) string {
	if !strings.ContainsAny(key, "~/") {
		return key
	}
	return strings.ReplaceAll(strings.ReplaceAll(key, "~", "~0"), "/", "~1")
}

// UnescapeToken reads a JSON pointer token.
func UnescapeToken(token string) string {
	if !strings.Contains(token, "~") {
		return token
	}
	return strings.ReplaceAll(strings.ReplaceAll(token, "~1", "/"), "~0", "~")
}

// In reports whether v is one of values (enum).
func In(v *Value, values []Value) bool {
	for i := range values {
		if v.kind == values[i].kind && (v.kind != String || v.text == values[i].text) && v.Equal(values[i]) {
			return true
		}
	}
	return false
}

// MultipleOf reports whether f is a multiple of m, as JSON Schema validators in JavaScript
// decide it: f / m is an integer (and not so large that JavaScript writes it with an exponent).
func MultipleOf(f, m float64) bool {
	if m == 0 {
		return false
	}
	q := f / m
	return q == math.Trunc(q) && math.Abs(q) < 1e21
}

// ValueOrAbsent is *v, or the Absent value for nil.
func ValueOrAbsent(v *Value) Value {
	if v == nil {
		return Value{}
	}
	return *v
}

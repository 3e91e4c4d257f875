package jsonrpc

import (
	"errors"
	"fmt"
	"strconv"
	"sync"
	"unicode/utf16"
	"unicode/utf8"
)

// MaxDepth is the deepest nesting of arrays and objects Parse reads.
const MaxDepth = 10000

// SyntaxError is JSON text that does not parse, with where it stopped.
type SyntaxError struct {
	// Offset is the byte offset of the problem in the text.
	Offset int
	// Line and Column (both from 1) of the problem.
	Line, Column int
	Problem      string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("line %d, column %d: %s", e.Line, e.Column, e.Problem)
}

// Parse reads one JSON text (RFC 8259, as JavaScript's JSON.parse reads it): object keys are
// compared exactly, a repeated key keeps its last value, numbers become doubles (1.0 is the
// integer 1; 1e400 is infinity, which validation refuses), and a \u escape of a lone
// surrogate is kept (see Value). Bytes that are not UTF-8 read as U+FFFD, as a UTF-8 decoder
// reads them.
func Parse(data []byte) (Value, error) {
	p := parsers.Get().(*parser)
	defer func() {
		p.data, p.pos = nil, 0
		parsers.Put(p)
	}()
	p.data = data
	p.space()
	v, err := p.value(0)
	if err != nil {
		return Value{}, err
	}
	p.space()
	if p.pos < len(p.data) {
		return Value{}, p.fail("unexpected %s after the JSON value", p.describe())
	}
	return v, nil
}

// parsers keep their stacks and the member names they have seen from one message to the next.
var parsers = sync.Pool{New: func() any { return &parser{names: map[string]string{}} }}

// Member names are few and repeated in every message of a protocol: each is kept once.
const (
	maxNames      = 4096
	maxNameLength = 64
)

type parser struct {
	data []byte
	pos  int
	buf  []byte
	// The members and items of the objects and arrays being read, nested ones on top: each
	// object or array is copied out once, at its exact size, when it closes.
	members []Member
	items   []Value
	names   map[string]string
}

func (p *parser) fail(format string, args ...any) error {
	line, column := 1, 1
	for i := 0; i < p.pos && i < len(p.data); i++ {
		if p.data[i] == '\n' {
			line++
			column = 1
		} else if p.data[i]&0xC0 != 0x80 {
			column++
		}
	}
	return &SyntaxError{Offset: p.pos, Line: line, Column: column, Problem: fmt.Sprintf(format, args...)}
}

func (p *parser) describe() string {
	if p.pos >= len(p.data) {
		return "end of input"
	}
	r, _ := utf8.DecodeRune(p.data[p.pos:])
	return strconv.QuoteRune(r)
}

func (p *parser) space() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *parser) value(depth int) (Value, error) {
	if p.pos >= len(p.data) {
		return Value{}, p.fail("unexpected end of input")
	}
	switch c := p.data[p.pos]; {
	case c == '{':
		return p.object(depth + 1)
	case c == '[':
		return p.array(depth + 1)
	case c == '"':
		s, err := p.str()
		return Value{kind: String, text: s}, err
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	case p.literal("true"):
		return Value{kind: Bool, boolean: true}, nil
	case p.literal("false"):
		return Value{kind: Bool}, nil
	case p.literal("null"):
		return Value{kind: Null}, nil
	}
	return Value{}, p.fail("unexpected %s", p.describe())
}

func (p *parser) literal(word string) bool {
	if len(p.data)-p.pos >= len(word) && string(p.data[p.pos:p.pos+len(word)]) == word {
		p.pos += len(word)
		return true
	}
	return false
}

func (p *parser) object(depth int) (Value, error) {
	if depth > MaxDepth {
		return Value{}, p.fail("nested deeper than %d", MaxDepth)
	}
	p.pos++ // {
	base := len(p.members)
	p.space()
	if p.pos < len(p.data) && p.data[p.pos] == '}' {
		p.pos++
		return Value{kind: Object, members: []Member{}}, nil
	}
	for {
		p.space()
		if p.pos >= len(p.data) || p.data[p.pos] != '"' {
			return Value{}, p.fail("expected a member name, found %s", p.describe())
		}
		key, err := p.name()
		if err != nil {
			return Value{}, err
		}
		p.space()
		if p.pos >= len(p.data) || p.data[p.pos] != ':' {
			return Value{}, p.fail("expected ':' after a member name, found %s", p.describe())
		}
		p.pos++
		p.space()
		v, err := p.value(depth)
		if err != nil {
			return Value{}, err
		}
		p.members = append(p.members, Member{Key: key, Value: v})
		p.space()
		if p.pos < len(p.data) && p.data[p.pos] == ',' {
			p.pos++
			continue
		}
		if p.pos < len(p.data) && p.data[p.pos] == '}' {
			p.pos++
			members := make([]Member, len(p.members)-base)
			copy(members, p.members[base:])
			clear(p.members[base:])
			p.members = p.members[:base]
			return Value{kind: Object, members: orderInPlace(members)}, nil
		}
		return Value{}, p.fail("expected ',' or '}' in an object, found %s", p.describe())
	}
}

func (p *parser) array(depth int) (Value, error) {
	if depth > MaxDepth {
		return Value{}, p.fail("nested deeper than %d", MaxDepth)
	}
	p.pos++ // [
	base := len(p.items)
	p.space()
	if p.pos < len(p.data) && p.data[p.pos] == ']' {
		p.pos++
		return Value{kind: Array, items: []Value{}}, nil
	}
	for {
		p.space()
		v, err := p.value(depth)
		if err != nil {
			return Value{}, err
		}
		p.items = append(p.items, v)
		p.space()
		if p.pos < len(p.data) && p.data[p.pos] == ',' {
			p.pos++
			continue
		}
		if p.pos < len(p.data) && p.data[p.pos] == ']' {
			p.pos++
			items := make([]Value, len(p.items)-base)
			copy(items, p.items[base:])
			clear(p.items[base:])
			p.items = p.items[:base]
			return Value{kind: Array, items: items}, nil
		}
		return Value{}, p.fail("expected ',' or ']' in an array, found %s", p.describe())
	}
}

func (p *parser) number() (Value, error) {
	start := p.pos
	digits := func() int {
		n := 0
		for p.pos < len(p.data) && p.data[p.pos] >= '0' && p.data[p.pos] <= '9' {
			p.pos++
			n++
		}
		return n
	}
	if p.data[p.pos] == '-' {
		p.pos++
	}
	if p.pos < len(p.data) && p.data[p.pos] == '0' {
		p.pos++
	} else if digits() == 0 {
		return Value{}, p.fail("a number needs a digit, found %s", p.describe())
	}
	if p.pos < len(p.data) && p.data[p.pos] == '.' {
		p.pos++
		if digits() == 0 {
			return Value{}, p.fail("a number needs a digit after '.', found %s", p.describe())
		}
	}
	if p.pos < len(p.data) && (p.data[p.pos] == 'e' || p.data[p.pos] == 'E') {
		p.pos++
		if p.pos < len(p.data) && (p.data[p.pos] == '+' || p.data[p.pos] == '-') {
			p.pos++
		}
		if digits() == 0 {
			return Value{}, p.fail("a number needs a digit in its exponent, found %s", p.describe())
		}
	}
	f, err := strconv.ParseFloat(string(p.data[start:p.pos]), 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return Value{}, p.fail("%v", err)
	}
	// Out of range is what JavaScript reads too: infinity, or zero.
	return Value{kind: Number, number: f}, nil
}

// name reads a member name, kept once per parser when it is plain and short.
func (p *parser) name() (string, error) {
	start := p.pos + 1
	for i := start; i < len(p.data) && i-start <= maxNameLength; i++ {
		c := p.data[i]
		if c == '"' {
			if known, ok := p.names[string(p.data[start:i])]; ok {
				p.pos = i + 1
				return known, nil
			}
			break
		}
		if c == '\\' || c < 0x20 || c >= 0x80 {
			break
		}
	}
	s, err := p.str()
	if err == nil && len(s) <= maxNameLength && len(p.names) < maxNames {
		p.names[s] = s
	}
	return s, err
}

// str reads a string whose opening quote is at p.pos.
func (p *parser) str() (string, error) {
	p.pos++ // "
	start := p.pos
	// The common case: no escape, valid UTF-8, a slice of the input.
	for p.pos < len(p.data) {
		c := p.data[p.pos]
		if c == '"' {
			s := string(p.data[start:p.pos])
			p.pos++
			return s, nil
		}
		if c == '\\' || c < 0x20 || c >= 0x80 {
			break
		}
		p.pos++
	}
	p.buf = append(p.buf[:0], p.data[start:p.pos]...)
	for p.pos < len(p.data) {
		c := p.data[p.pos]
		switch {
		case c == '"':
			p.pos++
			return string(p.buf), nil
		case c < 0x20:
			return "", p.fail("a control character (U+%04X) must be escaped in a string", c)
		case c == '\\':
			if err := p.escape(); err != nil {
				return "", err
			}
		case c < 0x80:
			p.buf = append(p.buf, c)
			p.pos++
		default:
			r, size := utf8.DecodeRune(p.data[p.pos:])
			if r == utf8.RuneError && size <= 1 {
				r = utf8.RuneError
				size = 1
			}
			p.buf = utf8.AppendRune(p.buf, r)
			p.pos += size
		}
	}
	return "", p.fail("a string is not closed")
}

func (p *parser) escape() error {
	p.pos++ // backslash
	if p.pos >= len(p.data) {
		return p.fail("a string is not closed")
	}
	c := p.data[p.pos]
	p.pos++
	switch c {
	case '"', '\\', '/':
		p.buf = append(p.buf, c)
	case 'b':
		p.buf = append(p.buf, '\b')
	case 'f':
		p.buf = append(p.buf, '\f')
	case 'n':
		p.buf = append(p.buf, '\n')
	case 'r':
		p.buf = append(p.buf, '\r')
	case 't':
		p.buf = append(p.buf, '\t')
	case 'u':
		u, err := p.hex4()
		if err != nil {
			return err
		}
		if utf16.IsSurrogate(rune(u)) && u < 0xDC00 && p.pos+6 <= len(p.data) && p.data[p.pos] == '\\' && p.data[p.pos+1] == 'u' {
			save := p.pos
			p.pos += 2
			low, err := p.hex4()
			if err == nil && low >= 0xDC00 && low <= 0xDFFF {
				p.buf = utf8.AppendRune(p.buf, utf16.DecodeRune(rune(u), rune(low)))
				return nil
			}
			p.pos = save
		}
		p.buf = appendUnit(p.buf, u)
	default:
		p.pos--
		return p.fail("unknown escape \\%s in a string", p.describe())
	}
	return nil
}

func (p *parser) hex4() (uint16, error) {
	if p.pos+4 > len(p.data) {
		return 0, p.fail("a \\u escape needs four hex digits")
	}
	var u uint16
	for i := 0; i < 4; i++ {
		c := p.data[p.pos+i]
		var d byte
		switch {
		case c >= '0' && c <= '9':
			d = c - '0'
		case c >= 'a' && c <= 'f':
			d = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			d = c - 'A' + 10
		default:
			p.pos += i
			return 0, p.fail("a \\u escape needs four hex digits, found %s", p.describe())
		}
		u = u<<4 | uint16(d)
	}
	p.pos += 4
	return u, nil
}

// appendUnit appends one UTF-16 code unit: a lone surrogate as its three WTF-8 bytes.
func appendUnit(buf []byte, u uint16) []byte {
	if u >= 0xD800 && u <= 0xDFFF {
		return append(buf, 0xED, 0x80|byte((u>>6)&0x3F), 0x80|byte(u&0x3F))
	}
	return utf8.AppendRune(buf, rune(u))
}

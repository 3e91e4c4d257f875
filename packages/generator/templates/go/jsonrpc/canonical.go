package jsonrpc

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// AppendCanonical appends the canonical JSON text of v (RFC 8785's JSON Canonicalization
// Scheme, with lone surrogates written as their \u escapes) to buf:
//
//   - no whitespace; object members sorted by their names' UTF-16 code units;
//   - strings escaped as JavaScript's JSON.stringify escapes them: \" \\ \b \f \n \r \t,
//     other characters below U+0020 and lone surrogates as \u00xx (lower-case hex), and
//     everything else, U+2028, U+2029, <, > and & included, as itself;
//   - numbers as JavaScript writes the double (FormatNumber).
//
// Absent members of objects are left out; an absent value, or a number that is not finite,
// is an error.
func AppendCanonical(buf []byte, v Value) ([]byte, error) {
	switch v.kind {
	case Null:
		return append(buf, "null"...), nil
	case Bool:
		if v.boolean {
			return append(buf, "true"...), nil
		}
		return append(buf, "false"...), nil
	case Number:
		if math.IsInf(v.number, 0) || math.IsNaN(v.number) {
			return buf, fmt.Errorf("jsonrpc: %v is not a JSON number", v.number)
		}
		return AppendNumber(buf, v.number), nil
	case String:
		return AppendString(buf, v.text), nil
	case Array:
		buf = append(buf, '[')
		for i, item := range v.items {
			if i > 0 {
				buf = append(buf, ',')
			}
			var err error
			if buf, err = AppendCanonical(buf, item); err != nil {
				return buf, err
			}
		}
		return append(buf, ']'), nil
	case Object:
		members := make([]Member, 0, len(v.members))
		for _, m := range v.members {
			if m.Value.kind != Absent {
				members = append(members, m)
			}
		}
		sort.SliceStable(members, func(i, j int) bool { return CompareKeys(members[i].Key, members[j].Key) < 0 })
		buf = append(buf, '{')
		for i, m := range members {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = AppendString(buf, m.Key)
			buf = append(buf, ':')
			var err error
			if buf, err = AppendCanonical(buf, m.Value); err != nil {
				return buf, err
			}
		}
		return append(buf, '}'), nil
	}
	return buf, fmt.Errorf("jsonrpc: an absent value has no JSON text")
}

// Canonical is the canonical JSON text of v (see AppendCanonical).
func Canonical(v Value) ([]byte, error) {
	return AppendCanonical(nil, v)
}

const hexDigits = "0123456789abcdef"

// AppendString appends s as a JSON string, escaped as the canonical form escapes it.
func AppendString(buf []byte, s string) []byte {
	buf = append(buf, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < 0x80 {
			switch {
			case c == '"':
				buf = append(buf, '\\', '"')
			case c == '\\':
				buf = append(buf, '\\', '\\')
			case c == '\b':
				buf = append(buf, '\\', 'b')
			case c == '\f':
				buf = append(buf, '\\', 'f')
			case c == '\n':
				buf = append(buf, '\\', 'n')
			case c == '\r':
				buf = append(buf, '\\', 'r')
			case c == '\t':
				buf = append(buf, '\\', 't')
			case c < 0x20:
				buf = append(buf, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			default:
				buf = append(buf, c)
			}
			i++
			continue
		}
		if u, ok := surrogateAt(s, i); ok {
			buf = append(buf, '\\', 'u', hexDigits[u>>12], hexDigits[(u>>8)&0xF], hexDigits[(u>>4)&0xF], hexDigits[u&0xF])
			i += 3
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size <= 1 {
			buf = utf8.AppendRune(buf, utf8.RuneError)
			i++
			continue
		}
		buf = append(buf, s[i:i+size]...)
		i += size
	}
	return append(buf, '"')
}

// surrogateAt reports whether s holds the WTF-8 bytes of a lone surrogate at i, and which.
func surrogateAt(s string, i int) (uint16, bool) {
	if i+2 < len(s) && s[i] == 0xED && s[i+1] >= 0xA0 && s[i+1] <= 0xBF && s[i+2]&0xC0 == 0x80 {
		return 0xD000 | uint16(s[i+1]&0x3F)<<6 | uint16(s[i+2]&0x3F), true
	}
	return 0, false
}

// units calls yield with each UTF-16 code unit of s (lone surrogates as themselves, bytes that
// are not UTF-8 as U+FFFD), until it returns false.
func units(s string, yield func(u uint16) bool) {
	for i := 0; i < len(s); {
		if u, ok := surrogateAt(s, i); ok {
			if !yield(u) {
				return
			}
			i += 3
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		if r >= 0x10000 {
			r -= 0x10000
			if !yield(uint16(0xD800+(r>>10))) || !yield(uint16(0xDC00+(r&0x3FF))) {
				return
			}
			continue
		}
		if !yield(uint16(r)) {
			return
		}
	}
}

// CompareKeys orders two strings by their UTF-16 code units, as JavaScript compares
// strings (and the canonical form sorts member names): -1, 0 or 1.
func CompareKeys(a, b string) int {
	if a == b {
		return 0
	}
	var ua, ub []uint16
	units(a, func(u uint16) bool { ua = append(ua, u); return true })
	units(b, func(u uint16) bool { ub = append(ub, u); return true })
	for i := 0; i < len(ua) && i < len(ub); i++ {
		if ua[i] != ub[i] {
			if ua[i] < ub[i] {
				return -1
			}
			return 1
		}
	}
	switch {
	case len(ua) < len(ub):
		return -1
	case len(ua) > len(ub):
		return 1
	}
	return 0
}

// CodePoints is the length of s in Unicode code points, as JSON Schema counts a string's
// length (a lone surrogate counts as one).
func CodePoints(s string) int {
	n := 0
	for i := 0; i < len(s); n++ {
		if _, ok := surrogateAt(s, i); ok {
			i += 3
			continue
		}
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	return n
}

// CodeUnits is the length of s in UTF-16 code units, as JavaScript's String length counts it.
func CodeUnits(s string) int {
	n := 0
	units(s, func(uint16) bool { n++; return true })
	return n
}

// FormatNumber writes a double as JavaScript's Number.prototype.toString does: the
// shortest digits that read back as the same double, in positional notation from 1e-7 up
// to 1e21 and with an exponent outside it (5e-7, 1e+21); -0 is written 0.
func FormatNumber(f float64) string {
	return string(AppendNumber(nil, f))
}

// AppendNumber appends FormatNumber(f) to buf.
func AppendNumber(buf []byte, f float64) []byte {
	if f == 0 {
		return append(buf, '0')
	}
	if math.IsNaN(f) {
		return append(buf, "NaN"...)
	}
	if math.IsInf(f, 1) {
		return append(buf, "Infinity"...)
	}
	if math.IsInf(f, -1) {
		return append(buf, "-Infinity"...)
	}
	if f == math.Trunc(f) && math.Abs(f) < 1e21 {
		return strconv.AppendFloat(buf, f, 'f', -1, 64)
	}
	if f < 0 {
		buf = append(buf, '-')
		f = -f
	}
	e := strconv.FormatFloat(f, 'e', -1, 64) // d.ddde±XX
	mantissa, exponent, _ := strings.Cut(e, "e")
	digits := strings.Replace(mantissa, ".", "", 1)
	x, _ := strconv.Atoi(exponent)
	k := len(digits)
	n := x + 1
	switch {
	case k <= n && n <= 21:
		buf = append(buf, digits...)
		for i := 0; i < n-k; i++ {
			buf = append(buf, '0')
		}
	case 0 < n && n <= 21:
		buf = append(buf, digits[:n]...)
		buf = append(buf, '.')
		buf = append(buf, digits[n:]...)
	case -6 < n && n <= 0:
		buf = append(buf, '0', '.')
		for i := 0; i < -n; i++ {
			buf = append(buf, '0')
		}
		buf = append(buf, digits...)
	default:
		buf = append(buf, digits[0])
		if k > 1 {
			buf = append(buf, '.')
			buf = append(buf, digits[1:]...)
		}
		buf = append(buf, 'e')
		if n-1 >= 0 {
			buf = append(buf, '+')
		}
		buf = strconv.AppendInt(buf, int64(n-1), 10)
	}
	return buf
}

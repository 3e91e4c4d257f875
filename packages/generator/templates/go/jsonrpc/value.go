package jsonrpc

import (
	"fmt"
	"math"
)

// Kind is the JSON type of a Value.
type Kind uint8

// The kinds of a Value. The zero Value is Absent: a member that is not there, which is not
// the same as a member that is null.
const (
	Absent Kind = iota
	Null
	Bool
	Number
	String
	Array
	Object
)

func (k Kind) String() string {
	switch k {
	case Null:
		return "null"
	case Bool:
		return "boolean"
	case Number:
		return "number"
	case String:
		return "string"
	case Array:
		return "array"
	case Object:
		return "object"
	}
	return "absent"
}

// Member is one member of a JSON object.
type Member struct {
	Key   string
	Value Value
}

// Value is any JSON value, as JSON text denotes it: numbers are IEEE 754 doubles (as
// JavaScript and JSON Schema read them), strings may hold lone surrogates (kept as their
// WTF-8 bytes so that they are written back as the escapes they came from), and an object's
// members keep the order JavaScript gives them (integer-like names first, ascending, then the
// others as they came; a repeated name keeps its first place and its last value).
//
// Its zero value is Absent. Values are compared with Equal, not ==.
type Value struct {
	kind    Kind
	boolean bool
	number  float64
	text    string
	items   []Value
	members []Member
}

// NullValue is JSON null.
func NullValue() Value { return Value{kind: Null} }

// BoolValue is a JSON boolean.
func BoolValue(b bool) Value { return Value{kind: Bool, boolean: b} }

// NumberValue is a JSON number.
func NumberValue(f float64) Value { return Value{kind: Number, number: f} }

// IntValue is a JSON number holding an integer.
func IntValue(i int64) Value { return Value{kind: Number, number: float64(i)} }

// StringValue is a JSON string.
func StringValue(s string) Value { return Value{kind: String, text: s} }

// ArrayValue is a JSON array of the given items.
func ArrayValue(items ...Value) Value {
	if items == nil {
		items = []Value{}
	}
	return Value{kind: Array, items: items}
}

// ObjectValue is a JSON object of the given members; a repeated key keeps its first place
// and its last value, integer-like keys come first, as in JavaScript, and members whose value
// is Absent are left out.
func ObjectValue(members ...Member) Value {
	kept := members[:0:0]
	for _, m := range members {
		if m.Value.kind != Absent {
			kept = append(kept, m)
		}
	}
	return Value{kind: Object, members: orderInPlace(kept)}
}

// Kind is the value's JSON type; Absent for the zero Value.
func (v Value) Kind() Kind { return v.kind }

// IsAbsent reports whether the value is the zero Value (a member that is not there).
func (v Value) IsAbsent() bool { return v.kind == Absent }

// IsNull reports whether the value is JSON null.
func (v Value) IsNull() bool { return v.kind == Null }

// Bool is the value of a boolean; false for any other kind.
func (v Value) Bool() bool { return v.boolean }

// Float is the value of a number; 0 for any other kind.
func (v Value) Float() float64 { return v.number }

// Str is the value of a string; "" for any other kind.
func (v Value) Str() string { return v.text }

// Items are the items of an array; nil for any other kind.
func (v Value) Items() []Value { return v.items }

// Members are the members of an object in their order; nil for any other kind.
func (v Value) Members() []Member { return v.members }

// Len is the number of items of an array or members of an object.
func (v Value) Len() int {
	if v.kind == Array {
		return len(v.items)
	}
	return len(v.members)
}

// Get is the member named key of an object, or the Absent value.
func (v Value) Get(key string) Value {
	if p := v.Lookup(key); p != nil {
		return *p
	}
	return Value{}
}

// Lookup is a pointer to the member named key of an object (compared exactly, byte for
// byte), or nil.
func (v *Value) Lookup(key string) *Value {
	for i := range v.members {
		if v.members[i].Key == key {
			return &v.members[i].Value
		}
	}
	return nil
}

// IsInteger reports whether the value is a finite number with no fractional part, as JSON
// Schema's "integer" reads it (1.0 is an integer).
func (v Value) IsInteger() bool {
	return v.kind == Number && !math.IsInf(v.number, 0) && !math.IsNaN(v.number) && v.number == math.Trunc(v.number)
}

// IsFinite reports whether the value is a number JSON can carry (1e400 parses to infinity,
// which no JSON Schema type accepts).
func (v Value) IsFinite() bool {
	return v.kind == Number && !math.IsInf(v.number, 0) && !math.IsNaN(v.number)
}

// Int is the value of an integer number.
func (v Value) Int() int64 { return int64(v.number) }

// Equal reports whether two values are the same JSON value (objects compared without
// regard to member order).
func (v Value) Equal(w Value) bool {
	if v.kind != w.kind {
		return false
	}
	switch v.kind {
	case Bool:
		return v.boolean == w.boolean
	case Number:
		return v.number == w.number
	case String:
		return v.text == w.text
	case Array:
		if len(v.items) != len(w.items) {
			return false
		}
		for i := range v.items {
			if !v.items[i].Equal(w.items[i]) {
				return false
			}
		}
		return true
	case Object:
		if len(v.members) != len(w.members) {
			return false
		}
		for _, m := range v.members {
			other := w.Lookup(m.Key)
			if other == nil || !m.Value.Equal(*other) {
				return false
			}
		}
		return true
	}
	return true
}

// MarshalJSON writes the value's canonical JSON text. The Absent value cannot be written.
func (v Value) MarshalJSON() ([]byte, error) {
	if v.kind == Absent {
		return nil, fmt.Errorf("jsonrpc: an absent value has no JSON text")
	}
	return AppendCanonical(nil, v)
}

// UnmarshalJSON reads JSON text into the value.
func (v *Value) UnmarshalJSON(data []byte) error {
	parsed, err := Parse(data)
	if err != nil {
		return err
	}
	*v = parsed
	return nil
}

// String is the value's canonical JSON text, or "absent".
func (v Value) String() string {
	if v.kind == Absent {
		return "absent"
	}
	out, err := AppendCanonical(nil, v)
	if err != nil {
		return err.Error()
	}
	return string(out)
}

// arrayIndex reports whether key is a canonical array index ("0", "17"; not "01" or
// "4294967295"), the keys JavaScript orders first in an object, and its value.
func arrayIndex(key string) (uint32, bool) {
	if key == "" || len(key) > 10 || (len(key) > 1 && key[0] == '0') {
		return 0, false
	}
	var n uint64
	for i := 0; i < len(key); i++ {
		c := key[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + uint64(c-'0')
	}
	if n > math.MaxUint32-1 {
		return 0, false
	}
	return uint32(n), true
}

// orderInPlace gives members, in place, the order a JavaScript object gives its properties:
// a repeated key keeps its first place and takes its last value; integer-like keys come
// first, ascending; the rest keep their order.
func orderInPlace(members []Member) []Member {
	if members == nil {
		return []Member{}
	}
	indexed := false
	repeated := false
	if len(members) <= 16 {
		// Small objects are searched; large ones indexed, so that many members cost no more than a map.
		for i := range members {
			if !indexed {
				if _, ok := arrayIndex(members[i].Key); ok {
					indexed = true
				}
			}
			for j := 0; j < i && !repeated; j++ {
				repeated = members[j].Key == members[i].Key
			}
		}
	} else {
		seen := make(map[string]struct{}, len(members))
		for i := range members {
			if _, ok := seen[members[i].Key]; ok {
				repeated = true
			}
			seen[members[i].Key] = struct{}{}
			if !indexed {
				if _, ok := arrayIndex(members[i].Key); ok {
					indexed = true
				}
			}
		}
	}
	if repeated {
		members = withoutRepeats(members)
	}
	if indexed {
		sortIndexFirst(members)
	}
	return members
}

// withoutRepeats keeps each key once, at its first place, with its last value.
func withoutRepeats(members []Member) []Member {
	places := make(map[string]int, len(members))
	out := members[:0]
	for _, m := range members {
		if at, ok := places[m.Key]; ok {
			out[at].Value = m.Value
			continue
		}
		places[m.Key] = len(out)
		out = append(out, m)
	}
	clear(members[len(out):])
	return out
}

// sortIndexFirst moves the integer-like keys first, ascending, the others keeping their order.
func sortIndexFirst(members []Member) {
	var first, rest []Member
	for _, m := range members {
		if _, ok := arrayIndex(m.Key); ok {
			first = append(first, m)
		} else {
			rest = append(rest, m)
		}
	}
	// Insertion sort: such keys are few.
	for i := 1; i < len(first); i++ {
		for j := i; j > 0; j-- {
			a, _ := arrayIndex(first[j-1].Key)
			b, _ := arrayIndex(first[j].Key)
			if a <= b {
				break
			}
			first[j-1], first[j] = first[j], first[j-1]
		}
	}
	copy(members, first)
	copy(members[len(first):], rest)
}

// Map is an object's members as a map (nil for any other kind).
func (v Value) Map() map[string]Value {
	if v.kind != Object {
		return nil
	}
	out := make(map[string]Value, len(v.members))
	for _, m := range v.members {
		out[m.Key] = m.Value
	}
	return out
}

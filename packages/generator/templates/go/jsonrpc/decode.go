package jsonrpc

import (
	"fmt"
	"math"
	"strconv"
)

// DecodeError is JSON whose shape does not fit the Go type it is read into: where (a JSON
// pointer), what was expected and what was there. Validation reports what a schema refuses;
// a DecodeError only says that a value cannot be held.
type DecodeError struct {
	Pointer  string
	Expected string
	Got      Kind
}

func (e *DecodeError) Error() string {
	at := e.Pointer
	if at == "" {
		at = "(value)"
	}
	return fmt.Sprintf("%s: cannot read %s as %s", at, e.Got, e.Expected)
}

// Mismatch is the DecodeError of a value that is not what expected names.
func Mismatch(v *Value, expected string) error {
	return &DecodeError{Expected: expected, Got: v.kind}
}

// At places an error of reading the member key below it.
func At(key string, err error) error {
	if e, ok := err.(*DecodeError); ok {
		return &DecodeError{Pointer: "/" + EscapeToken(key) + e.Pointer, Expected: e.Expected, Got: e.Got}
	}
	return err
}

// AtIndex places an error of reading item i below it.
func AtIndex(i int, err error) error {
	if e, ok := err.(*DecodeError); ok {
		return &DecodeError{Pointer: "/" + strconv.Itoa(i) + e.Pointer, Expected: e.Expected, Got: e.Got}
	}
	return err
}

// AsString reads a string.
func AsString(v *Value) (string, error) {
	if v.kind != String {
		return "", Mismatch(v, "a string")
	}
	return v.text, nil
}

// AsInt reads an integer: a number with no fractional part (1.0 is 1), within int64.
func AsInt(v *Value) (int64, error) {
	if !v.IsInteger() || math.Abs(v.number) >= 1<<63 {
		return 0, Mismatch(v, "an integer")
	}
	return int64(v.number), nil
}

// AsFloat reads a number.
func AsFloat(v *Value) (float64, error) {
	if v.kind != Number {
		return 0, Mismatch(v, "a number")
	}
	return v.number, nil
}

// AsBool reads a boolean.
func AsBool(v *Value) (bool, error) {
	if v.kind != Bool {
		return false, Mismatch(v, "a boolean")
	}
	return v.boolean, nil
}

// AsValue reads any JSON value as it is.
func AsValue(v *Value) (Value, error) {
	return *v, nil
}

// NullType is the Go type of a value that can only be JSON null.
type NullType struct{}

// MarshalJSON writes null.
func (NullType) MarshalJSON() ([]byte, error) { return []byte("null"), nil }

// UnmarshalJSON reads null.
func (n *NullType) UnmarshalJSON(data []byte) error {
	v, err := Parse(data)
	if err != nil {
		return err
	}
	_, err = AsNull(&v)
	return err
}

// AsNull reads null.
func AsNull(v *Value) (NullType, error) {
	if v.kind != Null {
		return NullType{}, Mismatch(v, "null")
	}
	return NullType{}, nil
}

// WriteNull is JSON null.
func WriteNull(NullType) Value { return NullValue() }

// Ref is a pointer to x, with err passed on (for an optional member).
func Ref[T any](x T, err error) (*T, error) {
	if err != nil {
		return nil, err
	}
	return &x, nil
}

// ReadArray reads an array, each item with read.
func ReadArray[T any](v *Value, read func(*Value) (T, error)) ([]T, error) {
	if v.kind != Array {
		return nil, Mismatch(v, "an array")
	}
	out := make([]T, len(v.items))
	for i := range v.items {
		x, err := read(&v.items[i])
		if err != nil {
			return nil, AtIndex(i, err)
		}
		out[i] = x
	}
	return out, nil
}

// ReadMap reads an object whose members are all read by read.
func ReadMap[T any](v *Value, read func(*Value) (T, error)) (map[string]T, error) {
	if v.kind != Object {
		return nil, Mismatch(v, "an object")
	}
	out := make(map[string]T, len(v.members))
	for i := range v.members {
		x, err := read(&v.members[i].Value)
		if err != nil {
			return nil, At(v.members[i].Key, err)
		}
		out[v.members[i].Key] = x
	}
	return out, nil
}

// ReadNullable reads null as nil and anything else with read.
func ReadNullable[T any](v *Value, read func(*Value) (T, error)) (*T, error) {
	if v.kind == Null {
		return nil, nil
	}
	return Ref(read(v))
}

// WriteArray writes a slice as an array (a nil slice as []).
func WriteArray[T any](xs []T, write func(T) Value) Value {
	items := make([]Value, len(xs))
	for i, x := range xs {
		items[i] = write(x)
	}
	return Value{kind: Array, items: items}
}

// WriteMap writes a map as an object.
func WriteMap[T any](m map[string]T, write func(T) Value) Value {
	members := make([]Member, 0, len(m))
	for k, x := range m {
		members = append(members, Member{Key: k, Value: write(x)})
	}
	return ObjectValue(members...)
}

// WriteNullable writes nil as null, anything else with write.
func WriteNullable[T any](p *T, write func(T) Value) Value {
	if p == nil {
		return NullValue()
	}
	return write(*p)
}

// WriteValue writes a Value as it is.
func WriteValue(v Value) Value { return v }

// Optional is a member that may be absent, null or a value: the three states of a member
// that is both optional and nullable, which no pointer alone can tell apart. Its zero value
// is absent.
type Optional[T any] struct {
	state uint8 // 0 absent, 1 null, 2 a value
	value T
}

// Some is an Optional holding x.
func Some[T any](x T) Optional[T] { return Optional[T]{state: 2, value: x} }

// OptionalNull is an Optional holding null.
func OptionalNull[T any]() Optional[T] { return Optional[T]{state: 1} }

// IsAbsent reports whether the member is not there.
func (o Optional[T]) IsAbsent() bool { return o.state == 0 }

// IsNull reports whether the member is there and null.
func (o Optional[T]) IsNull() bool { return o.state == 1 }

// Get is the value, and whether there is one (neither absent nor null).
func (o Optional[T]) Get() (T, bool) { return o.value, o.state == 2 }

// ReadOptional reads a member that is there: null, or a value read with read.
func ReadOptional[T any](v *Value, read func(*Value) (T, error)) (Optional[T], error) {
	if v.kind == Null {
		return OptionalNull[T](), nil
	}
	x, err := read(v)
	if err != nil {
		return Optional[T]{}, err
	}
	return Some(x), nil
}

// WriteOptional writes an Optional: absent as the Absent value (left out of its object),
// null as null.
func WriteOptional[T any](o Optional[T], write func(T) Value) Value {
	switch o.state {
	case 1:
		return NullValue()
	case 2:
		return write(o.value)
	}
	return Value{}
}

// Put sets m[key] = x, making the map when it is nil.
func Put[T any](m map[string]T, key string, x T) map[string]T {
	if m == nil {
		m = map[string]T{}
	}
	m[key] = x
	return m
}

// UnknownTag is the DecodeError of a tagged union's tag that names no variant.
func UnknownTag(tagName string, tag *Value, union string) error {
	got := Absent
	if tag != nil {
		got = tag.kind
	}
	return &DecodeError{Pointer: "/" + EscapeToken(tagName), Expected: "a tag of " + union, Got: got}
}

// Decode parses JSON text, validates it with check in the given mode and reads it with read.
func Decode[T any](data []byte, typeName string, check func(*Checker, *Value) bool, read func(*Value) (T, error), mode Mode) (T, error) {
	var zero T
	v, err := Parse(data)
	if err != nil {
		return zero, err
	}
	if err := Validate(typeName, check, &v, mode); err != nil {
		return zero, err
	}
	return read(&v)
}

// UnknownType is the error of a type name the protocol does not have.
func UnknownType(name string) error {
	return fmt.Errorf("jsonrpc: the protocol has no type named %q", name)
}

// WrongGoType is the error of writing a Go value as a named type it is not.
func WrongGoType(name string, x any) error {
	return fmt.Errorf("jsonrpc: a %T is not a %s", x, name)
}

// OrNull reads null as the zero T (a nil slice, map or interface), anything else with read.
func OrNull[T any](v *Value, read func(*Value) (T, error)) (T, error) {
	if v.kind == Null {
		var zero T
		return zero, nil
	}
	return read(v)
}

// WriteArrayOrNull writes a nil slice as null, any other as an array.
func WriteArrayOrNull[T any](xs []T, write func(T) Value) Value {
	if xs == nil {
		return NullValue()
	}
	return WriteArray(xs, write)
}

// WriteMapOrNull writes a nil map as null, any other as an object.
func WriteMapOrNull[T any](m map[string]T, write func(T) Value) Value {
	if m == nil {
		return NullValue()
	}
	return WriteMap(m, write)
}

// WriteOrNull writes a nil interface value as null, any other with write.
func WriteOrNull[T any](x T, write func(T) Value) Value {
	if any(x) == nil {
		return NullValue()
	}
	return write(x)
}

// NoVariant is the DecodeError of a value no variant of a union without a tag accepts.
func NoVariant(v *Value, union string) error {
	return &DecodeError{Expected: "a variant of " + union, Got: v.kind}
}

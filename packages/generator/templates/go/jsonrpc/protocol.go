package jsonrpc

import (
	"fmt"
	"strings"
)

// Direction is who sends a message.
type Direction uint8

// The directions of a message: the client's, the server's, or either side's.
const (
	ClientToServer Direction = iota
	ServerToClient
	Both
)

func (d Direction) String() string {
	switch d {
	case ServerToClient:
		return "server_to_client"
	case Both:
		return "both"
	}
	return "client_to_server"
}

// SentBy reports whether the side whose messages go in direction from may send a message
// of direction d.
func (d Direction) SentBy(from Direction) bool {
	return d == Both || d == from
}

// Other is the direction of the answers to what d's sender sends.
func (d Direction) Other() Direction {
	if d == ServerToClient {
		return ClientToServer
	}
	return ServerToClient
}

// MethodInfo is one method of a protocol: who calls it, the named types of its params ("" for
// a method whose requests carry none) and result, and the registered errors it may answer with.
type MethodInfo struct {
	Name      string
	Direction Direction
	Params    string
	// Frame is how a request carries its params (see ParamsFrame).
	Frame  ParamsFrame
	Result string
	Errors []string
	// ErrorData is the type of error.data of any error the method answers with, or "".
	ErrorData string
}

// NotificationInfo is one notification of a protocol.
type NotificationInfo struct {
	Name      string
	Direction Direction
	Params    string
	Frame     ParamsFrame
}

// Absence is what a frame that leaves its params out means.
type Absence uint8

// The ways a protocol reads params left out.
const (
	// AbsentAsEmpty reads them as the empty object, checked as the params (the protocol says nothing).
	AbsentAsEmpty Absence = iota
	// AbsentAllowed lets a frame leave them out.
	AbsentAllowed
	// AbsentRefused refuses a frame that leaves them out.
	AbsentRefused
)

// ParamsFrame is how a message's frame carries its params: whether they may be left out, and
// their structure ("by-name", the default: an object; "by-position": an array; "either": an
// array then gives the named params in the order of Names).
type ParamsFrame struct {
	Absent    Absence
	Structure string
	Names     []string
}

// read is the params as their schema reads them (Absent when left out and allowed), or why not.
func (f ParamsFrame) read(typeName string, raw Value) (Value, string) {
	if typeName == "" {
		if raw.IsAbsent() {
			return raw, ""
		}
		return raw, "must be left out: the message takes no params"
	}
	if raw.IsAbsent() {
		switch f.Absent {
		case AbsentAllowed:
			return raw, ""
		case AbsentRefused:
			return raw, "are required: the message may not leave its params out"
		}
		return ObjectValue(), ""
	}
	switch f.Structure {
	case "by-position":
		if raw.kind != Array {
			return raw, "must be a JSON array (params by position)"
		}
	case "either":
		if raw.kind == Object || (raw.kind == Array && f.Names == nil) {
			return raw, ""
		}
		if raw.kind != Array {
			return raw, "must be a JSON object (by name) or a JSON array (by position)"
		}
		if len(raw.items) > len(f.Names) {
			return raw, fmt.Sprintf("has %d positions; the message takes at most %d (%s)", len(raw.items), len(f.Names), strings.Join(f.Names, ", "))
		}
		members := make([]Member, len(raw.items))
		for i, item := range raw.items {
			members[i] = Member{Key: f.Names[i], Value: item}
		}
		return ObjectValue(members...), ""
	default:
		if raw.kind != Object {
			if raw.kind == Array {
				return raw, "must be a JSON object (params by name), not an array"
			}
			return raw, "must be a JSON object (params by name)"
		}
	}
	return raw, ""
}

// ErrorInfo is one registered error: its reason, code and message, whether any request may
// get it, and the type of its data ("" when the registry gives none).
type ErrorInfo struct {
	Reason    string
	Code      int64
	Message   string
	AnyMethod bool
	Data      string
}

// Protocol is what a connection, a message checker and an ordering checker know of a
// protocol: its method and notification tables, its error registry, validation of its
// named types, its ordering rules and whether it takes batches. The generated package builds
// its own (NewProtocol).
type Protocol struct {
	Title         string
	Version       string
	Methods       map[string]MethodInfo
	Notifications map[string]NotificationInfo
	Errors        map[string]ErrorInfo
	// Validate checks a value as a named type.
	Validate func(typeName string, v *Value, mode Mode) error
	// Ordering are the rules of the order of notifications.
	Ordering []OrderingRule
	// Batches says whether a frame may be a JSON-RPC batch.
	Batches bool

	byCode map[int64]string
}

// Tables are what a Protocol is built from.
type Tables struct {
	Title, Version string
	Methods        []MethodInfo
	Notifications  []NotificationInfo
	Errors         []ErrorInfo
	Validate       func(typeName string, v *Value, mode Mode) error
	Ordering       []OrderingRule
	// NoBatches refuses JSON-RPC batches (a protocol that does not take them).
	NoBatches bool
}

// NewProtocol builds a Protocol from its tables.
func NewProtocol(t Tables) *Protocol {
	p := &Protocol{
		Title:         t.Title,
		Version:       t.Version,
		Methods:       map[string]MethodInfo{},
		Notifications: map[string]NotificationInfo{},
		Errors:        map[string]ErrorInfo{},
		Validate:      t.Validate,
		Ordering:      t.Ordering,
		Batches:       !t.NoBatches,
		byCode:        map[int64]string{},
	}
	for _, m := range t.Methods {
		p.Methods[m.Name] = m
	}
	for _, n := range t.Notifications {
		p.Notifications[n.Name] = n
	}
	for _, e := range t.Errors {
		p.Errors[e.Reason] = e
		p.byCode[e.Code] = e.Reason
	}
	return p
}

// ReasonOf is the registered reason of an error code, or "".
func (p *Protocol) ReasonOf(code int64) string {
	return p.byCode[code]
}

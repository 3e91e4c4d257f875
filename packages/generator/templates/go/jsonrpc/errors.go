package jsonrpc

import (
	"fmt"
	"strings"
)

// Error is a JSON-RPC error object: one the peer answered with, or one a handler returns
// to answer with. Code and Message are as sent; Data is absent when there is none. The
// registered reason of an error is in Data's "reason" member.
type Error struct {
	Code    int64
	Message string
	Data    Value
}

func (e *Error) Error() string {
	if reason := e.Reason(); reason != "" {
		return fmt.Sprintf("%s (%d, %s)", e.Message, e.Code, reason)
	}
	return fmt.Sprintf("%s (%d)", e.Message, e.Code)
}

// Reason is the registered reason the error names in data.reason, or "".
func (e *Error) Reason() string {
	if r := e.Data.Get("reason"); r.kind == String {
		return r.text
	}
	return ""
}

func (e *Error) toValue() Value {
	members := []Member{{"code", IntValue(e.Code)}, {"message", StringValue(e.Message)}}
	if !e.Data.IsAbsent() {
		members = append(members, Member{"data", e.Data})
	}
	return ObjectValue(members...)
}

// LocalErrorKind is what went wrong on this side of a connection.
type LocalErrorKind string

// The kinds of local error.
const (
	TransportClosed   LocalErrorKind = "transport_closed"
	Timeout           LocalErrorKind = "timeout"
	Aborted           LocalErrorKind = "aborted"
	InvalidOutgoing   LocalErrorKind = "invalid_outgoing"
	InvalidIncoming   LocalErrorKind = "invalid_incoming"
	ProtocolViolation LocalErrorKind = "protocol_violation"
)

// LocalError is something that went wrong on this side of a connection: a closed
// transport, a timeout, a message that failed validation. It is never sent.
type LocalError struct {
	Kind    LocalErrorKind
	Message string
	Issues  []Issue
}

func (e *LocalError) Error() string { return e.Message }

func localError(kind LocalErrorKind, format string, args ...any) *LocalError {
	return &LocalError{Kind: kind, Message: fmt.Sprintf(format, args...)}
}

func invalid(kind LocalErrorKind, what string, prefix string, issues []Issue) *LocalError {
	parts := make([]string, len(issues))
	for i, issue := range issues {
		parts[i] = FormatIssue(issue, prefix)
	}
	return &LocalError{Kind: kind, Message: fmt.Sprintf("%s: %s", what, strings.Join(parts, "; ")), Issues: issues}
}

// The standard JSON-RPC errors every connection answers with.
var standardErrors = map[string]ErrorInfo{
	"parse_error":      {Reason: "parse_error", Code: -32700, Message: "Parse error", AnyMethod: true},
	"invalid_request":  {Reason: "invalid_request", Code: -32600, Message: "Invalid Request", AnyMethod: true},
	"method_not_found": {Reason: "method_not_found", Code: -32601, Message: "Method not found", AnyMethod: true},
	"invalid_params":   {Reason: "invalid_params", Code: -32602, Message: "Invalid params", AnyMethod: true},
	"internal_error":   {Reason: "internal_error", Code: -32603, Message: "Internal error", AnyMethod: true},
}

// NewError is the error of a registered reason: its code from the protocol's registry, the
// message (the registry's when empty) and data, with the reason added to it.
func (p *Protocol) NewError(reason, message string, data ...Member) *Error {
	info, ok := p.Errors[reason]
	if !ok {
		info, ok = standardErrors[reason]
	}
	if !ok {
		// An unregistered reason is the caller's mistake: answered as an internal error.
		return &Error{Code: -32603, Message: "Internal error", Data: ObjectValue(Member{"reason", StringValue("internal_error")})}
	}
	if message == "" {
		message = info.Message
	}
	members := append(append([]Member{}, data...), Member{"reason", StringValue(reason)})
	return &Error{Code: info.Code, Message: message, Data: ObjectValue(members...)}
}

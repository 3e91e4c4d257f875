package jsonrpc

import "fmt"

// MessageKind is what a JSON-RPC message is.
type MessageKind uint8

// The kinds of message.
const (
	InvalidMessage MessageKind = iota
	Request
	NotificationMessage
	Response
)

// Message is one JSON-RPC 2.0 message, classified before any schema is read.
type Message struct {
	Kind MessageKind
	// ID is the request's or response's id (a string or a number; null for a response to a
	// message whose id could not be read); absent for a notification.
	ID Value
	// Method and Params of a request or notification (Params absent when not sent).
	Method string
	Params Value
	// Result or Error of a response: exactly one is present.
	Result Value
	Error  *Error
	// Problem says why an invalid message is invalid.
	Problem string
}

func isID(v Value) bool {
	return v.kind == String || (v.kind == Number && v.IsFinite())
}

// Classify reads one parsed message (not a batch): a request, a notification, a response,
// or an invalid message and why. Members JSON-RPC 2.0 does not define make a request invalid.
func Classify(v *Value) Message {
	if v.kind != Object {
		return Message{Kind: InvalidMessage, ID: NullValue(), Problem: "a JSON-RPC message must be an object"}
	}
	id := v.Get("id")
	msgID := NullValue()
	if isID(id) {
		msgID = id
	}
	if version := v.Get("jsonrpc"); version.kind != String || version.text != "2.0" {
		return Message{Kind: InvalidMessage, ID: msgID, Problem: `jsonrpc must be "2.0"`}
	}
	if !id.IsAbsent() && id.kind != Null && !isID(id) {
		return Message{Kind: InvalidMessage, ID: NullValue(), Problem: "id must be a string, a number or null"}
	}
	if method := v.Lookup("method"); method != nil {
		if method.kind != String || method.text == "" {
			return Message{Kind: InvalidMessage, ID: msgID, Problem: "method must be a non-empty string"}
		}
		params := v.Get("params")
		if !params.IsAbsent() && params.kind != Object && params.kind != Array {
			return Message{Kind: InvalidMessage, ID: msgID, Problem: "params must be an object or an array"}
		}
		for _, m := range v.members {
			switch m.Key {
			case "jsonrpc", "id", "method", "params":
			default:
				return Message{Kind: InvalidMessage, ID: msgID, Problem: fmt.Sprintf("unknown member %q in a request", m.Key)}
			}
		}
		if id.IsAbsent() {
			return Message{Kind: NotificationMessage, Method: method.text, Params: params}
		}
		if id.kind == Null {
			return Message{Kind: InvalidMessage, ID: NullValue(), Problem: "a request id must not be null"}
		}
		return Message{Kind: Request, ID: id, Method: method.text, Params: params}
	}
	result, errValue := v.Lookup("result"), v.Lookup("error")
	if result != nil || errValue != nil {
		if id.IsAbsent() {
			return Message{Kind: InvalidMessage, ID: NullValue(), Problem: "a response must carry an id"}
		}
		if result != nil && errValue != nil {
			return Message{Kind: InvalidMessage, ID: msgID, Problem: "a response carries result or error, not both"}
		}
		if errValue != nil {
			code, message := errValue.Get("code"), errValue.Get("message")
			if errValue.kind != Object || !code.IsInteger() || message.kind != String {
				return Message{Kind: InvalidMessage, ID: msgID, Problem: "error must be an object with an integer code and a string message"}
			}
			return Message{Kind: Response, ID: id, Error: &Error{Code: code.Int(), Message: message.text, Data: errValue.Get("data")}}
		}
		return Message{Kind: Response, ID: id, Result: *result}
	}
	return Message{Kind: InvalidMessage, ID: msgID, Problem: "a message needs a method (request or notification) or a result or error (response)"}
}

func requestValue(id Value, method string, params Value) Value {
	return ObjectValue(Member{"jsonrpc", StringValue("2.0")}, Member{"id", id}, Member{"method", StringValue(method)}, Member{"params", params})
}

func notificationValue(method string, params Value) Value {
	return ObjectValue(Member{"jsonrpc", StringValue("2.0")}, Member{"method", StringValue(method)}, Member{"params", params})
}

func resultValue(id Value, result Value) Value {
	return ObjectValue(Member{"jsonrpc", StringValue("2.0")}, Member{"id", id}, Member{"result", result})
}

func errorValue(id Value, e *Error) Value {
	return ObjectValue(Member{"jsonrpc", StringValue("2.0")}, Member{"id", id}, Member{"error", e.toValue()})
}

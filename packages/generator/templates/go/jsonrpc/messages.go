package jsonrpc

import (
	"fmt"
	"strconv"
)

// Finding is one problem with one message of a sequence.
type Finding struct {
	// Index of the message in the sequence.
	Index int
	// Method is the method or notification the message is about, when known.
	Method string
	// Part is where Issue's pointer starts: "params", "result", "error", or "" for the
	// message itself.
	Part  string
	Issue Issue
}

// Pointer is the finding's JSON pointer into the message.
func (f Finding) Pointer() string {
	if f.Part == "" {
		return f.Issue.Pointer
	}
	return "/" + f.Part + f.Issue.Pointer
}

// MessageChecker checks a sequence of JSON-RPC messages against a protocol: a request
// against its method's params, a response against the result of the request with the same
// id seen earlier (or as a registered error), a notification against its params, and,
// unless told otherwise, the protocol's ordering rules across the messages.
type MessageChecker struct {
	protocol *Protocol
	mode     Mode
	requests map[string]string
	ordering *OrderingChecker
	fed      []int
	last     int
}

// NewMessageChecker checks messages of p in the given mode; ordering turns the ordering
// rules on.
func NewMessageChecker(p *Protocol, mode Mode, ordering bool) *MessageChecker {
	m := &MessageChecker{protocol: p, mode: mode, requests: map[string]string{}}
	if ordering {
		m.ordering = NewOrderingChecker(p.Ordering)
	}
	return m
}

func idKey(id Value) string {
	if id.kind == String {
		return "string:" + id.text
	}
	return "number:" + FormatNumber(id.number)
}

// senderOf is who sent a message, as far as the registry tells.
func (m *MessageChecker) senderOf(v *Value) (Direction, bool) {
	msg := Classify(v)
	switch msg.Kind {
	case Request:
		// A message either side may send does not tell its sender.
		if info, ok := m.protocol.Methods[msg.Method]; ok && info.Direction != Both {
			return info.Direction, true
		}
	case NotificationMessage:
		if info, ok := m.protocol.Notifications[msg.Method]; ok && info.Direction != Both {
			return info.Direction, true
		}
	case Response:
		if msg.ID.kind != Null {
			if method, ok := m.requests[idKey(msg.ID)]; ok {
				return m.protocol.Methods[method].Direction.Other(), true
			}
		}
	}
	return 0, false
}

// Check checks one message (or batch) at index and returns its findings, ordering ones included.
func (m *MessageChecker) Check(v *Value, index int) []Finding {
	m.last = index
	first := v
	if v.kind == Array && len(v.items) > 0 {
		first = &v.items[0]
	}
	sender, known := m.senderOf(first)
	var findings []Finding
	if v.kind == Array && !m.protocol.Batches {
		findings = append(findings, Finding{Index: index, Issue: Issue{Message: "is a batch, and the protocol does not allow JSON-RPC batches"}})
	}
	findings = append(findings, m.checkShape(v, index)...)
	if m.ordering != nil && known {
		m.fed = append(m.fed, index)
		for _, violation := range m.ordering.Accept(*v, sender) {
			findings = append(findings, m.orderingFinding(violation))
		}
	}
	return findings
}

// End is the end of the input: the ordering findings only the end shows. Scopes still
// open are allowed: a sequence may stop anywhere.
func (m *MessageChecker) End() []Finding {
	if m.ordering == nil {
		return nil
	}
	var out []Finding
	for _, violation := range m.ordering.End(true) {
		out = append(out, m.orderingFinding(violation))
	}
	return out
}

func (m *MessageChecker) orderingFinding(v Violation) Finding {
	index := m.last
	if v.FrameIndex < len(m.fed) {
		index = m.fed[v.FrameIndex]
	}
	return Finding{Index: index, Issue: Issue{Message: fmt.Sprintf("breaks ordering rule %s: %s", v.Rule, v.Message)}}
}

func (m *MessageChecker) checkShape(v *Value, index int) []Finding {
	if v.kind != Array {
		return m.checkOne(v, index)
	}
	if len(v.items) == 0 {
		return []Finding{{Index: index, Issue: Issue{Message: "an empty batch is not a valid JSON-RPC message"}}}
	}
	var out []Finding
	for i := range v.items {
		for _, f := range m.checkOne(&v.items[i], index) {
			if f.Part == "" {
				f.Issue.Pointer = "/" + strconv.Itoa(i) + f.Issue.Pointer
			}
			out = append(out, f)
		}
	}
	return out
}

func (m *MessageChecker) findings(index int, part, method string, err error) []Finding {
	if err == nil {
		return nil
	}
	issues := issuesOf(err)
	out := make([]Finding, len(issues))
	for i, issue := range issues {
		out[i] = Finding{Index: index, Method: method, Part: part, Issue: issue}
	}
	return out
}

func (m *MessageChecker) checkOne(v *Value, index int) []Finding {
	msg := Classify(v)
	switch msg.Kind {
	case InvalidMessage:
		return []Finding{{Index: index, Issue: Issue{Message: "not a valid JSON-RPC 2.0 message: " + msg.Problem}}}
	case Request:
		info, ok := m.protocol.Methods[msg.Method]
		if !ok {
			hint := ""
			if _, isNotification := m.protocol.Notifications[msg.Method]; isNotification {
				hint = " (it is a notification: it has no id)"
			}
			return []Finding{{Index: index, Method: msg.Method, Issue: Issue{Pointer: "/method", Message: "is not a method of the protocol" + hint, Received: StringValue(msg.Method)}}}
		}
		m.requests[idKey(msg.ID)] = msg.Method
		return m.paramsFindings(index, msg.Method, info.Params, info.Frame, msg.Params)
	case NotificationMessage:
		info, ok := m.protocol.Notifications[msg.Method]
		if !ok {
			hint := ""
			if _, isMethod := m.protocol.Methods[msg.Method]; isMethod {
				hint = " (it is a method: a request needs an id)"
			}
			return []Finding{{Index: index, Method: msg.Method, Issue: Issue{Pointer: "/method", Message: "is not a notification of the protocol" + hint, Received: StringValue(msg.Method)}}}
		}
		return m.paramsFindings(index, msg.Method, info.Params, info.Frame, msg.Params)
	}
	// A response.
	method := ""
	if msg.ID.kind != Null {
		method = m.requests[idKey(msg.ID)]
	}
	if e := msg.Error; e != nil {
		return m.checkError(e, method, index)
	}
	if method == "" {
		return []Finding{{Index: index, Issue: Issue{Pointer: "/id", Message: "answers no request seen earlier in the input", Received: msg.ID}}}
	}
	return m.findings(index, "result", method, m.protocol.Validate(m.protocol.Methods[method].Result, &msg.Result, m.mode))
}

// checkError checks an error response: its code against the registry and against the errors
// the method answers with, and its data against the type the error (or else the method) gives it.
func (m *MessageChecker) checkError(e *Error, method string, index int) []Finding {
	finding := func(issue Issue) Finding {
		return Finding{Index: index, Method: method, Part: "error", Issue: issue}
	}
	registered := m.protocol.ReasonOf(e.Code)
	reason := e.Data.Get("reason")
	if reason.kind == String {
		if info, ok := m.protocol.Errors[reason.text]; ok && info.Code != e.Code {
			return []Finding{finding(Issue{Pointer: "/code", Message: fmt.Sprintf("does not match the registered code %d of reason %q", info.Code, reason.text), Received: IntValue(e.Code)})}
		}
	}
	// The error's own data type, else the one the method gives every error it answers with.
	dataType := ""
	if registered != "" {
		dataType = m.protocol.Errors[registered].Data
	}
	if dataType == "" && method != "" {
		dataType = m.protocol.Methods[method].ErrorData
	}
	if _, known := m.protocol.Errors[reason.text]; registered != "" && dataType == "" && reason.kind == String && reason.text != registered && !known {
		return []Finding{finding(Issue{Pointer: "/data/reason", Message: fmt.Sprintf("is not an error reason of the protocol (code %d is %q)", e.Code, registered), Received: reason})}
	}
	if registered == "" && (e.Code > -32000 || e.Code < -32768) {
		return nil
	}
	if registered == "" {
		return []Finding{finding(Issue{Pointer: "/code", Message: "is not in the error registry", Received: IntValue(e.Code)})}
	}
	var findings []Finding
	if method != "" && !m.protocol.Errors[registered].AnyMethod && !contains(m.protocol.Methods[method].Errors, registered) {
		findings = append(findings, finding(Issue{Pointer: "/code", Message: fmt.Sprintf("%q is not an error %s is registered to return", registered, method), Received: IntValue(e.Code)}))
	}
	if dataType != "" {
		if e.Data.IsAbsent() {
			if m.protocol.Errors[registered].Data != "" {
				findings = append(findings, finding(Issue{Pointer: "/data", Message: fmt.Sprintf("is missing: error %q carries data of type %s", registered, dataType)}))
			}
		} else if err := m.protocol.Validate(dataType, &e.Data, m.mode); err != nil {
			for _, issue := range issuesOf(err) {
				issue.Pointer = "/data" + issue.Pointer
				findings = append(findings, finding(issue))
			}
		}
	}
	return findings
}

// paramsFindings reads a message's params as their frame says and checks them against
// typeName ("" for a message that carries none).
func (m *MessageChecker) paramsFindings(index int, method, typeName string, frame ParamsFrame, raw Value) []Finding {
	params, problem := frame.read(typeName, raw)
	if problem != "" {
		issue := Issue{Message: problem}
		if !raw.IsAbsent() {
			issue.Received = raw
		}
		return []Finding{{Index: index, Method: method, Part: "params", Issue: issue}}
	}
	if typeName == "" || params.IsAbsent() {
		return nil
	}
	return m.findings(index, "params", method, m.protocol.Validate(typeName, &params, m.mode))
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

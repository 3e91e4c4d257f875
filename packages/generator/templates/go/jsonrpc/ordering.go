package jsonrpc

import (
	"fmt"
	"strings"
)

// RuleKind is the kind of an ordering rule.
type RuleKind string

// The kinds of ordering rule:
//
//   - Precedes: within a scope, First comes before every notification of Then.
//   - Leads: within a scope, Notification comes at most once, and before every notification
//     of Before (a scope without it is fine).
//   - SingleTerminal: a scope ends with exactly one of Terminals; nothing of After follows
//     it; a scope still open at the end of the stream is reported.
//   - QuietAfter: after Notification, nothing of Quiet until a request of Until for the same
//     scope gets a successful response.
//   - Paired: every Open is followed by exactly one Close with the same key.
//   - Sequence: Field of the scope's Notifications, and of the items of each listed method
//     result, goes up by exactly one each time.
const (
	Precedes       RuleKind = "precedes"
	Leads          RuleKind = "leads"
	SingleTerminal RuleKind = "single_terminal"
	QuietAfter     RuleKind = "quiet_after"
	Paired         RuleKind = "paired"
	Sequence       RuleKind = "sequence"
)

// KeyPart is one value that identifies a scope: what it names in messages, and the JSON
// pointer into params where it is.
type KeyPart struct {
	Name    string
	Pointer string
}

// PairEnd is one end of a Paired rule: the notification and the pointer of its key.
type PairEnd struct {
	Notification string
	Key          string
}

// ResultItems is a method whose result holds an array (at Items) of items carrying a
// Sequence rule's field.
type ResultItems struct {
	Method string
	Items  string
}

// OrderingRule is one ordering rule of a protocol; which fields it uses depends on its Kind.
type OrderingRule struct {
	ID          string
	Requirement string
	Description string
	Kind        RuleKind
	Scope       []KeyPart

	First         string        // Precedes
	Then          []string      // Precedes
	Notification  string        // Leads, QuietAfter
	Before        []string      // Leads
	Terminals     []string      // SingleTerminal
	After         []string      // SingleTerminal
	Quiet         []string      // QuietAfter
	Until         []string      // QuietAfter
	Subject       string        // Paired
	Open          PairEnd       // Paired
	Close         PairEnd       // Paired
	Field         string        // Sequence
	Notifications []string      // Sequence
	Results       []ResultItems // Sequence
}

// Violation is a broken ordering rule: which, why, and the frame that broke it (by its
// index in the stream).
type Violation struct {
	Rule        string
	Requirement string
	Message     string
	FrameIndex  int
	Frame       Value
}

// OrderingChecker checks the ordering rules on the frames of one connection, seen from one end.
type OrderingChecker struct {
	checks     []*ruleCheck
	pending    map[string]pendingRequest
	index      int
	ended      bool
	fresh      []Violation
	violations []Violation
	terminated map[string]map[string]bool
}

type pendingRequest struct {
	method string
	params Value
}

type at struct {
	index int
	frame Value
}

type scope struct {
	key   string
	label string
}

// ruleCheck is what one rule does with each kind of message; every hook may be nil.
type ruleCheck struct {
	notification func(method string, params *Value, at at)
	request      func(method string, params *Value, id string)
	response     func(method string, params *Value, id string, ok bool, result *Value, at at)
	end          func(open func(scope []KeyPart, key string) bool)
}

// NewOrderingChecker makes a checker of the given rules.
func NewOrderingChecker(rules []OrderingRule) *OrderingChecker {
	o := &OrderingChecker{pending: map[string]pendingRequest{}, terminated: map[string]map[string]bool{}}
	for _, rule := range rules {
		rule := rule
		report := func(message string, a at) {
			o.fresh = append(o.fresh, Violation{Rule: rule.ID, Requirement: rule.Requirement, Message: message, FrameIndex: a.index, Frame: a.frame})
		}
		o.checks = append(o.checks, checkOf(rule, report, o.terminated))
	}
	return o
}

func quote(v Value) string { return v.String() }

// scopeOf is the scope a message belongs to, or false when params do not carry every key part.
func scopeOf(parts []KeyPart, params *Value) (scope, bool) {
	values := make([]Value, len(parts))
	for i, part := range parts {
		v, ok := ValueAt(params, part.Pointer)
		if !ok || (v.kind != String && v.kind != Number) {
			return scope{}, false
		}
		values[i] = v
	}
	labels := make([]string, len(parts))
	for i := range parts {
		j := len(parts) - 1 - i
		labels[i] = parts[j].Name + " " + quote(values[j])
	}
	return scope{key: ArrayValue(values...).String(), label: strings.Join(labels, " of ")}, true
}

func scopeID(parts []KeyPart) string {
	pointers := make([]Value, len(parts))
	for i, p := range parts {
		pointers[i] = StringValue(p.Pointer)
	}
	return ArrayValue(pointers...).String()
}

func setOf(names []string) map[string]bool {
	out := make(map[string]bool, len(names))
	for _, n := range names {
		out[n] = true
	}
	return out
}

func checkOf(rule OrderingRule, report func(string, at), terminated map[string]map[string]bool) *ruleCheck {
	switch rule.Kind {
	case Precedes:
		then := setOf(rule.Then)
		opened := map[string]bool{}
		return &ruleCheck{notification: func(method string, params *Value, a at) {
			s, ok := scopeOf(rule.Scope, params)
			if !ok {
				return
			}
			if method == rule.First {
				opened[s.key] = true
			} else if then[method] && !opened[s.key] {
				report(fmt.Sprintf("%s for %s at frame %d came before its %s", method, s.label, a.index, rule.First), a)
			}
		}}
	case Leads:
		before := setOf(rule.Before)
		led := map[string]at{}
		type follower struct {
			method string
			at     at
		}
		followed := map[string]follower{}
		return &ruleCheck{notification: func(method string, params *Value, a at) {
			if method != rule.Notification && !before[method] {
				return
			}
			s, ok := scopeOf(rule.Scope, params)
			if !ok {
				return
			}
			if method != rule.Notification {
				if _, seen := followed[s.key]; !seen {
					followed[s.key] = follower{method, a}
				}
				return
			}
			earlier, wasLed := led[s.key]
			other, wasFollowed := followed[s.key]
			if wasLed {
				report(fmt.Sprintf("%s for %s at frame %d is a second one: it already came at frame %d", method, s.label, a.index, earlier.index), a)
			} else if wasFollowed {
				report(fmt.Sprintf("%s for %s at frame %d came after %s at frame %d; it must come first", method, s.label, a.index, other.method, other.at.index), a)
			}
			if !wasLed {
				led[s.key] = a
			}
		}}
	case SingleTerminal:
		terminals := setOf(rule.Terminals)
		after := setOf(rule.After)
		type first struct {
			label string
			at    at
		}
		type ending struct {
			method string
			at     at
		}
		var order []string
		seen := map[string]first{}
		ended := map[string]ending{}
		id := scopeID(rule.Scope)
		if terminated[id] == nil {
			terminated[id] = map[string]bool{}
		}
		ids := terminated[id]
		return &ruleCheck{
			notification: func(method string, params *Value, a at) {
				if !terminals[method] && !after[method] {
					return
				}
				s, ok := scopeOf(rule.Scope, params)
				if !ok {
					return
				}
				if _, known := seen[s.key]; !known {
					seen[s.key] = first{s.label, a}
					order = append(order, s.key)
				}
				end, wasEnded := ended[s.key]
				switch {
				case wasEnded && terminals[method]:
					report(fmt.Sprintf("%s for %s at frame %d is a second terminal notification: %s at frame %d already ended it", method, s.label, a.index, end.method, end.at.index), a)
				case wasEnded:
					report(fmt.Sprintf("%s for %s at frame %d came after %s at frame %d had ended it", method, s.label, a.index, end.method, end.at.index), a)
				case terminals[method]:
					ended[s.key] = ending{method, a}
					ids[s.key] = true
				}
			},
			end: func(open func([]KeyPart, string) bool) {
				for _, key := range order {
					if _, done := ended[key]; done || open(rule.Scope, key) {
						continue
					}
					f := seen[key]
					report(fmt.Sprintf("%s, first seen at frame %d, has no terminal notification (%s) by the end of the stream", f.label, f.at.index, strings.Join(rule.Terminals, " or ")), f.at)
				}
			},
		}
	case QuietAfter:
		quiet := setOf(rule.Quiet)
		until := setOf(rule.Until)
		type held struct {
			method, label string
			at            at
		}
		type quietState struct {
			since   at
			pending map[string]bool
			held    []held
		}
		var order []string
		quieted := map[string]*quietState{}
		message := func(method, label string, a, since at) string {
			return fmt.Sprintf("%s for %s at frame %d came after %s at frame %d and before a successful %s", method, label, a.index, rule.Notification, since.index, strings.Join(rule.Until, " or "))
		}
		release := func(state *quietState) {
			for _, h := range state.held {
				report(message(h.method, h.label, h.at, state.since), h.at)
			}
			state.held = nil
		}
		return &ruleCheck{
			notification: func(method string, params *Value, a at) {
				s, ok := scopeOf(rule.Scope, params)
				if !ok {
					return
				}
				state := quieted[s.key]
				if state != nil && quiet[method] {
					if len(state.pending) > 0 {
						state.held = append(state.held, held{method, s.label, a})
					} else {
						report(message(method, s.label, a, state.since), a)
					}
				}
				if method == rule.Notification && state == nil {
					quieted[s.key] = &quietState{since: a, pending: map[string]bool{}}
					order = append(order, s.key)
				}
			},
			request: func(method string, params *Value, id string) {
				if !until[method] {
					return
				}
				if s, ok := scopeOf(rule.Scope, params); ok {
					if state := quieted[s.key]; state != nil {
						state.pending[id] = true
					}
				}
			},
			response: func(method string, params *Value, id string, ok bool, _ *Value, _ at) {
				if !until[method] {
					return
				}
				s, found := scopeOf(rule.Scope, params)
				if !found {
					return
				}
				state := quieted[s.key]
				if state == nil || !state.pending[id] {
					return
				}
				delete(state.pending, id)
				if ok {
					delete(quieted, s.key)
				} else if len(state.pending) == 0 {
					release(state)
				}
			},
			end: func(func([]KeyPart, string) bool) {
				for _, key := range order {
					if state := quieted[key]; state != nil {
						release(state)
					}
				}
			},
		}
	case Paired:
		type pair struct {
			scope  scope
			label  string
			opened at
			closed *at
		}
		var order []string
		pairs := map[string]*pair{}
		keyOf := func(params *Value, pointer string) (scope, string, string, bool) {
			s, ok := scopeOf(rule.Scope, params)
			value, found := ValueAt(params, pointer)
			if !ok || !found || (value.kind != String && value.kind != Number) {
				return scope{}, "", "", false
			}
			return s, ArrayValue(StringValue(s.key), value).String(), fmt.Sprintf("%s %s of %s", rule.Subject, quote(value), s.label), true
		}
		return &ruleCheck{
			notification: func(method string, params *Value, a at) {
				switch method {
				case rule.Open.Notification:
					s, key, label, ok := keyOf(params, rule.Open.Key)
					if !ok {
						return
					}
					if p := pairs[key]; p != nil {
						report(fmt.Sprintf("%s for %s at frame %d opened it a second time (first at frame %d)", method, label, a.index, p.opened.index), a)
					} else {
						pairs[key] = &pair{scope: s, label: label, opened: a}
						order = append(order, key)
					}
				case rule.Close.Notification:
					_, key, label, ok := keyOf(params, rule.Close.Key)
					if !ok {
						return
					}
					p := pairs[key]
					switch {
					case p == nil:
						report(fmt.Sprintf("%s for %s at frame %d came before its %s", method, label, a.index, rule.Open.Notification), a)
					case p.closed != nil:
						report(fmt.Sprintf("%s for %s at frame %d closed it a second time (first at frame %d)", method, label, a.index, p.closed.index), a)
					default:
						closed := a
						p.closed = &closed
					}
				}
			},
			end: func(open func([]KeyPart, string) bool) {
				for _, key := range order {
					p := pairs[key]
					if p.closed != nil || open(rule.Scope, p.scope.key) {
						continue
					}
					report(fmt.Sprintf("%s, opened by %s at frame %d, never got its %s", p.label, rule.Open.Notification, p.opened.index, rule.Close.Notification), p.opened)
				}
			},
		}
	case Sequence:
		notifications := setOf(rule.Notifications)
		type last struct {
			value float64
			at    at
		}
		lasts := map[string]last{}
		return &ruleCheck{
			notification: func(method string, params *Value, a at) {
				if !notifications[method] {
					return
				}
				s, ok := scopeOf(rule.Scope, params)
				value, found := ValueAt(params, rule.Field)
				if !ok || !found || !value.IsInteger() {
					return
				}
				if previous, seen := lasts[s.key]; seen && value.number != previous.value+1 {
					report(fmt.Sprintf("%s for %s at frame %d has %s %s; expected %s after %s at frame %d", method, s.label, a.index, rule.Field, FormatNumber(value.number), FormatNumber(previous.value+1), FormatNumber(previous.value), previous.at.index), a)
				}
				lasts[s.key] = last{value.number, a}
			},
			response: func(method string, params *Value, _ string, ok bool, result *Value, a at) {
				if !ok {
					return
				}
				var source *ResultItems
				for i := range rule.Results {
					if rule.Results[i].Method == method {
						source = &rule.Results[i]
						break
					}
				}
				if source == nil {
					return
				}
				items, found := ValueAt(result, source.Items)
				if !found || items.kind != Array {
					return
				}
				whose := ""
				if s, ok := scopeOf(rule.Scope, params); ok {
					whose = " for " + s.label
				}
				var previous *float64
				for i, item := range items.items {
					value, found := ValueAt(&item, rule.Field)
					if !found || !value.IsInteger() {
						continue
					}
					if previous != nil && value.number != *previous+1 {
						report(fmt.Sprintf("%s result%s at frame %d: %s/%d%s is %s; expected %s after %s", method, whose, a.index, source.Items, i, rule.Field, FormatNumber(value.number), FormatNumber(*previous+1), FormatNumber(*previous)), a)
					}
					v := value.number
					previous = &v
				}
			},
		}
	}
	return &ruleCheck{}
}

func pendingKey(d Direction, id Value) string {
	return d.String() + " " + id.String()
}

// Accept feeds one frame (a message or a batch) in the order seen; from is who sent it. It
// returns the violations it found.
func (o *OrderingChecker) Accept(frame Value, from Direction) []Violation {
	a := at{index: o.index, frame: frame}
	o.index++
	if frame.kind == Array {
		for i := range frame.items {
			o.one(&frame.items[i], from, a)
		}
	} else {
		o.one(&frame, from, a)
	}
	return o.take()
}

func (o *OrderingChecker) one(v *Value, from Direction, a at) {
	msg := Classify(v)
	switch msg.Kind {
	case NotificationMessage:
		for _, c := range o.checks {
			if c.notification != nil {
				c.notification(msg.Method, &msg.Params, a)
			}
		}
	case Request:
		key := pendingKey(from, msg.ID)
		o.pending[key] = pendingRequest{method: msg.Method, params: msg.Params}
		for _, c := range o.checks {
			if c.request != nil {
				c.request(msg.Method, &msg.Params, key)
			}
		}
	case Response:
		key := pendingKey(from.Other(), msg.ID)
		request, ok := o.pending[key]
		if !ok {
			return
		}
		delete(o.pending, key)
		success := msg.Error == nil
		for _, c := range o.checks {
			if c.response != nil {
				c.response(request.method, &request.params, key, success, &msg.Result, a)
			}
		}
	}
}

func (o *OrderingChecker) take() []Violation {
	found := o.fresh
	o.fresh = nil
	o.violations = append(o.violations, found...)
	return found
}

// End is the end of the stream: the violations only the end shows (a scope with no
// terminal, a pair never closed). With openScopesAllowed, scopes that have not reached
// their terminal yet, and what is open inside them, are not reported. A second call finds
// nothing new.
func (o *OrderingChecker) End(openScopesAllowed bool) []Violation {
	if o.ended {
		return nil
	}
	o.ended = true
	open := func(parts []KeyPart, key string) bool {
		return openScopesAllowed && !o.terminated[scopeID(parts)][key]
	}
	for _, c := range o.checks {
		if c.end != nil {
			c.end(open)
		}
	}
	return o.take()
}

// Violations are every violation found so far.
func (o *OrderingChecker) Violations() []Violation { return o.violations }

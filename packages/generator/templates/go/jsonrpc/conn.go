package jsonrpc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"sync"
	"time"
)

// Handler answers one request the peer sent: its params, validated, and a result or an
// error. An *Error is answered as it is; any other error is answered as an internal error
// (-32603) without its text and reported to OnInternalError.
type Handler func(ctx context.Context, params *Value) (Value, error)

// Validation is how the messages of one direction are checked.
type Validation uint8

// The ways to check messages. The zero value is each option's default.
const (
	ValidateDefault Validation = iota
	ValidateStrict
	ValidateTolerant
	ValidateOff
)

func (v Validation) mode(fallback Validation) (Mode, bool) {
	if v == ValidateDefault {
		v = fallback
	}
	switch v {
	case ValidateStrict:
		return Strict, true
	case ValidateTolerant:
		return Tolerant, true
	}
	return Strict, false
}

// ConnOptions are the settings of one end of a connection.
type ConnOptions struct {
	// Outgoing is how what this end sends is checked before it is sent (params of its
	// requests and notifications, results of the requests it answers). Default strict.
	Outgoing Validation
	// Incoming is how what the peer sends is checked before it is handed over (results,
	// notifications, params of the requests it sends). Default tolerant.
	Incoming Validation
	// RequestTimeout fails a request that gets no response within it with a local
	// Timeout error. Zero: none (a request's context can still end it).
	RequestTimeout time.Duration
	// OnProtocolError receives every incoming frame that was dropped because it was not
	// valid, with why.
	OnProtocolError func(err *LocalError, frame []byte)
	// OnInternalError receives every error a handler returned (or panic it raised) that was
	// answered as an internal error. Never sent.
	OnInternalError func(err error, method string)
	// AnswerMalformed answers a frame that is not JSON (-32700) and an invalid request
	// (-32600), as a JSON-RPC server must. A client leaves it off.
	AnswerMalformed bool
	// MaxBatch is the most messages one batch may hold. Default 1000.
	MaxBatch int
	// OversizedReply is the error a frame over the transport's size limit is answered with
	// (with AnswerMalformed); default invalid_request naming the limit.
	OversizedReply func(e *FrameTooLarge) *Error
}

type call struct {
	method string
	done   chan Message
}

type subscription struct {
	method string
	f      func(method string, params *Value)
}

// Conn is one end of a JSON-RPC 2.0 connection over a Transport: it sends requests and
// matches their responses, sends and receives notifications, and serves the requests the
// peer sends with handlers, each checked against the protocol. A client and a server are
// both a Conn; they differ in the direction of what they send.
type Conn struct {
	transport Transport
	protocol  *Protocol
	sends     Direction
	handlers  map[string]Handler
	opts      ConnOptions

	mu      sync.Mutex
	nextID  int64
	pending map[string]*call
	subs    []*subscription
	closed  bool
	err     error
	done    chan struct{}
	writeMu sync.Mutex
	ctx     context.Context
	cancel  context.CancelFunc
}

// NewConn makes one end of a connection: sends is the direction of what this end sends
// (ClientToServer for a client), handlers serve the methods the peer calls on it. Nothing
// is read until Run.
func NewConn(t Transport, p *Protocol, sends Direction, handlers map[string]Handler, opts ConnOptions) *Conn {
	if opts.MaxBatch <= 0 {
		opts.MaxBatch = 1000
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Conn{transport: t, protocol: p, sends: sends, handlers: handlers, opts: opts, pending: map[string]*call{}, done: make(chan struct{}), ctx: ctx, cancel: cancel}
}

// Run reads and handles frames until the transport ends, ctx ends or Close is called. It
// returns nil when the peer closed the connection (or Close was called).
func (c *Conn) Run(ctx context.Context) error {
	go func() {
		select {
		case <-ctx.Done():
			c.shutdown(ctx.Err())
		case <-c.done:
		}
	}()
	for {
		frame, err := c.transport.Read(c.ctx)
		var tooLarge *FrameTooLarge
		if errors.As(err, &tooLarge) {
			c.oversized(tooLarge)
			continue
		}
		if err != nil {
			if errors.Is(err, io.EOF) || c.isClosed() {
				err = nil
			}
			c.shutdown(err)
			return err
		}
		c.receive(frame)
	}
}

func (c *Conn) oversized(e *FrameTooLarge) {
	c.protocolError(localError(ProtocolViolation, "the peer sent %v", e), nil)
	if !c.opts.AnswerMalformed {
		return
	}
	reply := c.protocol.NewError("invalid_request", "Invalid Request: "+e.Error())
	if c.opts.OversizedReply != nil {
		reply = c.opts.OversizedReply(e)
	}
	_ = c.write(c.ctx, errorValue(NullValue(), reply))
}

// Done is closed when the connection has closed.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Err is why the connection closed: nil for a clean close, or while it is open.
func (c *Conn) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Close closes the connection: pending requests fail with a local TransportClosed error.
func (c *Conn) Close() error {
	c.shutdown(nil)
	return nil
}

func (c *Conn) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

func (c *Conn) shutdown(err error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	c.err = err
	pending := c.pending
	c.pending = map[string]*call{}
	c.mu.Unlock()
	c.cancel()
	_ = c.transport.Close()
	close(c.done)
	for _, p := range pending {
		close(p.done)
	}
}

func (c *Conn) write(ctx context.Context, v Value) error {
	frame, err := Canonical(v)
	if err != nil {
		return err
	}
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	return c.transport.Write(ctx, frame)
}

// Request sends a request and waits for its result: an *Error when the peer answers with
// one, a *LocalError for what went wrong here (invalid params, a timeout, the context's
// end, a closed connection, an invalid result).
func (c *Conn) Request(ctx context.Context, method string, params Value) (Value, error) {
	info, ok := c.protocol.Methods[method]
	if !ok || !info.Direction.SentBy(c.sends) {
		return Value{}, invalid(InvalidOutgoing, "params of "+method+" are invalid", "", []Issue{{Message: fmt.Sprintf("%q is not a method this end calls", method), Received: StringValue(method)}})
	}
	if err := c.checkOutgoingParams(method, info.Params, &params); err != nil {
		return Value{}, err
	}
	if err := ctx.Err(); err != nil {
		return Value{}, localError(Aborted, "%s was aborted", method)
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return Value{}, localError(TransportClosed, "the connection is closed")
	}
	c.nextID++
	id := IntValue(c.nextID)
	key := id.String()
	pending := &call{method: method, done: make(chan Message, 1)}
	c.pending[key] = pending
	c.mu.Unlock()
	forget := func() {
		c.mu.Lock()
		delete(c.pending, key)
		c.mu.Unlock()
	}
	if err := c.write(ctx, requestValue(id, method, params)); err != nil {
		forget()
		return Value{}, localError(TransportClosed, "could not send %s: %v", method, err)
	}
	var timeout <-chan time.Time
	if c.opts.RequestTimeout > 0 {
		timer := time.NewTimer(c.opts.RequestTimeout)
		defer timer.Stop()
		timeout = timer.C
	}
	select {
	case response, open := <-pending.done:
		if !open {
			return Value{}, localError(TransportClosed, "the connection closed before %s was answered", method)
		}
		if response.Error != nil {
			return Value{}, response.Error
		}
		if mode, check := c.opts.Incoming.mode(ValidateTolerant); check {
			if err := c.protocol.Validate(info.Result, &response.Result, mode); err != nil {
				return Value{}, invalid(InvalidIncoming, "the result of "+method+" is invalid", "result", issuesOf(err))
			}
		}
		return response.Result, nil
	case <-timeout:
		forget()
		return Value{}, localError(Timeout, "%s got no response within %v", method, c.opts.RequestTimeout)
	case <-ctx.Done():
		forget()
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return Value{}, localError(Timeout, "%s got no response before its deadline", method)
		}
		return Value{}, localError(Aborted, "%s was aborted", method)
	}
}

// Notify sends a notification, checked first; an invalid one is a *LocalError and is not sent.
func (c *Conn) Notify(ctx context.Context, method string, params Value) error {
	info, ok := c.protocol.Notifications[method]
	if !ok || !info.Direction.SentBy(c.sends) {
		return invalid(InvalidOutgoing, "notification "+method+" is invalid", "", []Issue{{Message: fmt.Sprintf("%q is not a notification this end sends", method), Received: StringValue(method)}})
	}
	if err := c.checkOutgoingParams(method, info.Params, &params); err != nil {
		return err
	}
	if c.isClosed() {
		return localError(TransportClosed, "the connection is closed")
	}
	if err := c.write(ctx, notificationValue(method, params)); err != nil {
		return localError(TransportClosed, "could not send %s: %v", method, err)
	}
	return nil
}

// checkOutgoingParams checks the params of a message this end sends against its type: a
// message whose type is "" carries no params.
func (c *Conn) checkOutgoingParams(method, typeName string, params *Value) error {
	if typeName == "" {
		if !params.IsAbsent() {
			return invalid(InvalidOutgoing, "params of "+method+" are invalid", "", []Issue{{Pointer: "", Message: method + " carries no params", Received: *params}})
		}
		return nil
	}
	if mode, check := c.opts.Outgoing.mode(ValidateStrict); check {
		if err := c.protocol.Validate(typeName, params, mode); err != nil {
			return invalid(InvalidOutgoing, "params of "+method+" are invalid", "params", issuesOf(err))
		}
	}
	return nil
}

// incomingParams reads the params of a message the peer sent as their frame says and checks
// them against typeName ("" when the message carries none): nil when they are valid.
func (c *Conn) incomingParams(typeName string, frame ParamsFrame, params *Value) error {
	read, problem := frame.read(typeName, *params)
	if problem != "" {
		issue := Issue{Message: problem}
		if !params.IsAbsent() {
			issue.Received = *params
		}
		return &ValidationError{Type: typeName, Issues: []Issue{issue}}
	}
	*params = read
	if typeName == "" || read.IsAbsent() {
		return nil
	}
	if mode, check := c.opts.Incoming.mode(ValidateTolerant); check {
		return c.protocol.Validate(typeName, params, mode)
	}
	return nil
}

// On calls f with the params (checked) of every notification named method the peer
// sends, in the order they come, on the goroutine that reads the connection: f must not
// block. It returns the function that unsubscribes.
func (c *Conn) On(method string, f func(params *Value)) func() {
	return c.subscribe(&subscription{method: method, f: func(_ string, params *Value) { f(params) }})
}

// OnAny calls f with every notification the peer sends (see On).
func (c *Conn) OnAny(f func(method string, params *Value)) func() {
	return c.subscribe(&subscription{f: f})
}

func (c *Conn) subscribe(s *subscription) func() {
	c.mu.Lock()
	c.subs = append(c.subs, s)
	c.mu.Unlock()
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		for i, other := range c.subs {
			if other == s {
				c.subs = append(c.subs[:i:i], c.subs[i+1:]...)
				return
			}
		}
	}
}

func issuesOf(err error) []Issue {
	var v *ValidationError
	if errors.As(err, &v) {
		return v.Issues
	}
	return []Issue{{Message: err.Error()}}
}

func (c *Conn) protocolError(err *LocalError, frame []byte) {
	if c.opts.OnProtocolError != nil {
		c.opts.OnProtocolError(err, frame)
	}
}

func (c *Conn) receive(frame []byte) {
	parsed, err := Parse(frame)
	if err != nil {
		c.protocolError(localError(ProtocolViolation, "the peer sent a frame that is not JSON: %v", err), frame)
		if c.opts.AnswerMalformed {
			_ = c.write(c.ctx, errorValue(NullValue(), &Error{Code: -32700, Message: "Parse error: " + err.Error(), Data: ObjectValue(Member{"reason", StringValue("parse_error")})}))
		}
		return
	}
	if parsed.kind != Array {
		if reply := c.receiveOne(&parsed, frame); reply != nil {
			go func() {
				a := <-reply
				_ = c.write(c.ctx, a.value)
				a.run()
			}()
		}
		return
	}
	if !c.protocol.Batches {
		c.protocolError(localError(ProtocolViolation, "the peer sent a batch, and the protocol takes none"), frame)
		if c.opts.AnswerMalformed {
			_ = c.write(c.ctx, errorValue(NullValue(), c.protocol.NewError("invalid_request", "Invalid Request: the protocol does not take JSON-RPC batches")))
		}
		return
	}
	if len(parsed.items) == 0 {
		if c.opts.AnswerMalformed {
			_ = c.write(c.ctx, errorValue(NullValue(), c.protocol.NewError("invalid_request", "Invalid Request: an empty batch")))
		}
		c.protocolError(localError(ProtocolViolation, "the peer sent an empty batch"), frame)
		return
	}
	if len(parsed.items) > c.opts.MaxBatch {
		_ = c.write(c.ctx, errorValue(NullValue(), c.protocol.NewError("invalid_request", fmt.Sprintf("Invalid Request: a batch holds at most %d messages", c.opts.MaxBatch))))
		return
	}
	// The requests of one batch are answered in one batch, as JSON-RPC asks.
	var replies []<-chan answer
	for i := range parsed.items {
		if reply := c.receiveOne(&parsed.items[i], frame); reply != nil {
			replies = append(replies, reply)
		}
	}
	if len(replies) == 0 {
		return
	}
	go func() {
		var owed []Value
		var done []answer
		for _, reply := range replies {
			a := <-reply
			owed = append(owed, a.value)
			done = append(done, a)
		}
		_ = c.write(c.ctx, ArrayValue(owed...))
		for _, a := range done {
			a.run()
		}
	}()
}

// answer is the response to one request, with what its handler asked to run once it is sent.
type answer struct {
	value Value
	after *afterReply
}

func (a answer) run() {
	if a.after == nil {
		return
	}
	a.after.mu.Lock()
	fs := a.after.fs
	a.after.sent = true
	a.after.mu.Unlock()
	for _, f := range fs {
		go f()
	}
}

type afterReplyKey struct{}

type afterReply struct {
	mu   sync.Mutex
	fs   []func()
	sent bool
}

// AfterReply runs f (on a goroutine of its own) once the response to the request whose
// handler got ctx has been written: work whose messages must follow the response, such as
// a turn whose notifications follow the result of the request that started it. Called
// with any other context, it runs f at once.
func AfterReply(ctx context.Context, f func()) {
	a, ok := ctx.Value(afterReplyKey{}).(*afterReply)
	if ok {
		a.mu.Lock()
		if !a.sent {
			a.fs = append(a.fs, f)
			a.mu.Unlock()
			return
		}
		a.mu.Unlock()
	}
	go f()
}

// receiveOne handles one message; for a request, the channel its answer comes on.
func (c *Conn) receiveOne(v *Value, frame []byte) <-chan answer {
	msg := Classify(v)
	switch msg.Kind {
	case InvalidMessage:
		c.protocolError(localError(ProtocolViolation, "the peer sent an invalid message: %s", msg.Problem), frame)
		// A broken response is never answered, so that two ends cannot answer each other forever.
		responseShaped := v.kind == Object && (v.Lookup("result") != nil || v.Lookup("error") != nil)
		if c.opts.AnswerMalformed && !responseShaped {
			return answered(errorValue(msg.ID, c.protocol.NewError("invalid_request", "Invalid Request: "+msg.Problem)))
		}
	case Response:
		c.settle(msg, frame)
	case NotificationMessage:
		c.notification(msg, frame)
	case Request:
		reply := make(chan answer, 1)
		go func() {
			after := &afterReply{}
			reply <- answer{value: c.serve(context.WithValue(c.ctx, afterReplyKey{}, after), msg), after: after}
		}()
		return reply
	}
	return nil
}

func answered(v Value) <-chan answer {
	reply := make(chan answer, 1)
	reply <- answer{value: v}
	return reply
}

func (c *Conn) settle(msg Message, frame []byte) {
	key := msg.ID.String()
	c.mu.Lock()
	pending, ok := c.pending[key]
	if ok {
		delete(c.pending, key)
	}
	c.mu.Unlock()
	if !ok {
		if msg.ID.kind == Null && msg.Error != nil {
			c.protocolError(localError(ProtocolViolation, "the peer reported an error without an id: %s", msg.Error.Message), frame)
		} else {
			c.protocolError(localError(ProtocolViolation, "a response with unknown id %s", msg.ID.String()), frame)
		}
		return
	}
	pending.done <- msg
}

func (c *Conn) notification(msg Message, frame []byte) {
	info, ok := c.protocol.Notifications[msg.Method]
	if !ok || !info.Direction.SentBy(c.sends.Other()) {
		c.protocolError(invalid(InvalidIncoming, "notification "+msg.Method+" is invalid", "", []Issue{{Message: fmt.Sprintf("%q is not a notification the peer sends", msg.Method), Received: StringValue(msg.Method)}}), frame)
		return
	}
	params := msg.Params
	if err := c.incomingParams(info.Params, info.Frame, &params); err != nil {
		c.protocolError(invalid(InvalidIncoming, "notification "+msg.Method+" is invalid", "params", issuesOf(err)), frame)
		return
	}
	c.mu.Lock()
	subs := append([]*subscription(nil), c.subs...)
	c.mu.Unlock()
	for _, s := range subs {
		if s.method == "" || s.method == msg.Method {
			s.f(msg.Method, &params)
		}
	}
}

// serve answers one request.
func (c *Conn) serve(ctx context.Context, msg Message) (reply Value) {
	info, known := c.protocol.Methods[msg.Method]
	c.mu.Lock()
	handler := c.handlers[msg.Method]
	c.mu.Unlock()
	if !known || !info.Direction.SentBy(c.sends.Other()) || handler == nil {
		return errorValue(msg.ID, c.protocol.NewError("method_not_found", "Method not found: "+msg.Method, Member{"method", StringValue(msg.Method)}))
	}
	params := msg.Params
	if err := c.incomingParams(info.Params, info.Frame, &params); err != nil {
		issues := issuesOf(err)
		return errorValue(msg.ID, c.protocol.NewError("invalid_params", "Invalid params for "+msg.Method+": "+describe(issues), Member{"errors", issuesValue(issues)}))
	}
	defer func() {
		if r := recover(); r != nil {
			c.internal(fmt.Errorf("panic: %v\n%s", r, debug.Stack()), msg.Method)
			reply = errorValue(msg.ID, c.protocol.NewError("internal_error", ""))
		}
	}()
	result, err := handler(ctx, &params)
	if err != nil {
		var wire *Error
		if errors.As(err, &wire) {
			return errorValue(msg.ID, wire)
		}
		c.internal(err, msg.Method)
		return errorValue(msg.ID, c.protocol.NewError("internal_error", ""))
	}
	if result.IsAbsent() {
		result = NullValue()
	}
	if mode, check := c.opts.Outgoing.mode(ValidateStrict); check {
		if err := c.protocol.Validate(info.Result, &result, mode); err != nil {
			c.internal(fmt.Errorf("the result of %s does not match its schema: %s", msg.Method, describe(issuesOf(err))), msg.Method)
			return errorValue(msg.ID, c.protocol.NewError("internal_error", ""))
		}
	}
	return resultValue(msg.ID, result)
}

func (c *Conn) internal(err error, method string) {
	if c.opts.OnInternalError != nil {
		c.opts.OnInternalError(err, method)
	}
}

func describe(issues []Issue) string {
	parts := ""
	for i, issue := range issues {
		if i > 0 {
			parts += "; "
		}
		at := issue.Pointer
		if at == "" {
			at = "(params)"
		}
		parts += at + " " + issue.Message
	}
	return parts
}

func issuesValue(issues []Issue) Value {
	items := make([]Value, len(issues))
	for i, issue := range issues {
		members := []Member{{"pointer", StringValue(issue.Pointer)}, {"message", StringValue(issue.Message)}}
		if !issue.Expected.IsAbsent() {
			members = append(members, Member{"expected", issue.Expected})
		}
		if !issue.Received.IsAbsent() {
			members = append(members, Member{"received", issue.Received})
		}
		items[i] = ObjectValue(members...)
	}
	return ArrayValue(items...)
}

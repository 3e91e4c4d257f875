package jsonrpc

import (
	"context"
	"fmt"
)

// Call sends a request and reads its result with read (the generated clients' methods).
func Call[R any](ctx context.Context, c *Conn, method string, params Value, read func(*Value) (R, error)) (R, error) {
	var zero R
	result, err := c.Request(ctx, method, params)
	if err != nil {
		return zero, err
	}
	out, err := read(&result)
	if err != nil {
		return zero, &LocalError{Kind: InvalidIncoming, Message: fmt.Sprintf("the result of %s cannot be read: %v", method, err)}
	}
	return out, nil
}

// Subscribe calls f with the params of every notification named method, read with read
// (see Conn.On). Params that cannot be read are reported to OnProtocolError and dropped.
func Subscribe[P any](c *Conn, method string, read func(*Value) (P, error), f func(P)) func() {
	return c.On(method, func(params *Value) {
		p, err := read(params)
		if err != nil {
			c.protocolError(localError(InvalidIncoming, "notification %s cannot be read: %v", method, err), nil)
			return
		}
		f(p)
	})
}

// Handle makes a Handler of a typed one: params read with read, the result written with write.
func Handle[P, R any](read func(*Value) (P, error), write func(R) Value, f func(context.Context, P) (R, error)) Handler {
	return func(ctx context.Context, params *Value) (Value, error) {
		p, err := read(params)
		if err != nil {
			return Value{}, fmt.Errorf("the params cannot be read: %w", err)
		}
		result, err := f(ctx, p)
		if err != nil {
			return Value{}, err
		}
		return write(result), nil
	}
}

// HandleWithoutParams makes a Handler of a typed one for a method whose requests carry no params.
func HandleWithoutParams[R any](write func(R) Value, f func(context.Context) (R, error)) Handler {
	return func(ctx context.Context, _ *Value) (Value, error) {
		result, err := f(ctx)
		if err != nil {
			return Value{}, err
		}
		return write(result), nil
	}
}

// Handle sets the handler of a method the peer calls on this end; call it before Run.
func (c *Conn) Handle(method string, h Handler) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.handlers == nil {
		c.handlers = map[string]Handler{}
	}
	c.handlers[method] = h
}

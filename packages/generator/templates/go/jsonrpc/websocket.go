package jsonrpc

import (
	"context"
	"errors"
	"io"
	"net/http"

	"github.com/coder/websocket"
)

// WebSocketTransport is a Transport over one WebSocket connection: one text message per frame.
type WebSocketTransport struct {
	conn *websocket.Conn
}

// DialWebSocket connects to a WebSocket server (ws:// or wss://). opts may be nil; set its
// HTTPHeader for a bearer token.
func DialWebSocket(ctx context.Context, url string, opts *websocket.DialOptions) (*WebSocketTransport, error) {
	conn, _, err := websocket.Dial(ctx, url, opts)
	if err != nil {
		return nil, err
	}
	conn.SetReadLimit(DefaultMaxFrameBytes)
	return &WebSocketTransport{conn: conn}, nil
}

// AcceptWebSocket accepts a WebSocket connection on an HTTP request (a server's end). opts
// may be nil.
func AcceptWebSocket(w http.ResponseWriter, r *http.Request, opts *websocket.AcceptOptions) (*WebSocketTransport, error) {
	conn, err := websocket.Accept(w, r, opts)
	if err != nil {
		return nil, err
	}
	conn.SetReadLimit(DefaultMaxFrameBytes)
	return &WebSocketTransport{conn: conn}, nil
}

// SetReadLimit sets the largest message Read accepts.
func (t *WebSocketTransport) SetReadLimit(bytes int64) { t.conn.SetReadLimit(bytes) }

// Read waits for the next text message; io.EOF when the peer closed normally.
func (t *WebSocketTransport) Read(ctx context.Context) ([]byte, error) {
	for {
		kind, data, err := t.conn.Read(ctx)
		if err != nil {
			status := websocket.CloseStatus(err)
			if status == websocket.StatusNormalClosure || status == websocket.StatusGoingAway || errors.Is(err, io.EOF) {
				return nil, io.EOF
			}
			return nil, err
		}
		if kind == websocket.MessageText {
			return data, nil
		}
	}
}

// Write sends the frame as one text message.
func (t *WebSocketTransport) Write(ctx context.Context, frame []byte) error {
	return t.conn.Write(ctx, websocket.MessageText, frame)
}

// Close closes the connection normally.
func (t *WebSocketTransport) Close() error {
	return t.conn.Close(websocket.StatusNormalClosure, "")
}

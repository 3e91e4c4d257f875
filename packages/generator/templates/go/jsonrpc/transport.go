package jsonrpc

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
)

// Transport carries frames, each one JSON-RPC message or batch: a line on stdio, a message
// on a WebSocket. Read and Write may be called from different goroutines; Close ends both.
type Transport interface {
	// Read waits for the next frame; io.EOF when the peer closed the connection.
	Read(ctx context.Context) ([]byte, error)
	// Write sends one frame.
	Write(ctx context.Context, frame []byte) error
	// Close closes the transport.
	Close() error
}

// DefaultMaxFrameBytes is the largest frame a transport reads unless told otherwise.
const DefaultMaxFrameBytes = 4 << 20

// FrameTooLarge is the error of reading a frame over the limit. The frame is skipped and
// reading can go on.
type FrameTooLarge struct {
	Limit, Bytes int
}

func (e *FrameTooLarge) Error() string {
	return fmt.Sprintf("a frame of %d bytes is over the limit of %d", e.Bytes, e.Limit)
}

// LineTransport is a Transport over a pair of byte streams: one frame per line (LF; a CR
// before it is dropped). A line over MaxFrameBytes is skipped and reported once by Read as a
// *FrameTooLarge.
type LineTransport struct {
	r      *bufio.Reader
	w      io.Writer
	closer func() error
	// MaxFrameBytes is the largest line Read returns; default DefaultMaxFrameBytes.
	MaxFrameBytes int

	readMu    sync.Mutex
	closeOnce sync.Once
	closed    chan struct{}
	lines     chan lineResult
}

type lineResult struct {
	frame []byte
	err   error
}

// NewLineTransport reads frames from r and writes them to w; close (may be nil) is called
// by Close.
func NewLineTransport(r io.Reader, w io.Writer, close func() error) *LineTransport {
	return &LineTransport{r: bufio.NewReaderSize(r, 64<<10), w: w, closer: close, closed: make(chan struct{})}
}

// Stdio is the line transport of this process's standard input and output (a server's
// end: its client runs it as a child process).
func Stdio() *LineTransport {
	return NewLineTransport(os.Stdin, os.Stdout, nil)
}

// readLines reads lines into t.lines until the stream ends, so that Read can give up on a
// line when its context ends without losing it.
func (t *LineTransport) readLines() {
	limit := t.MaxFrameBytes
	if limit <= 0 {
		limit = DefaultMaxFrameBytes
	}
	for {
		var line []byte
		size := 0
		var err error
		for {
			chunk, isPrefix, e := t.r.ReadLine()
			size += len(chunk)
			if size <= limit {
				line = append(line, chunk...)
			}
			if e != nil {
				err = e
				break
			}
			if !isPrefix {
				break
			}
		}
		var result lineResult
		switch {
		case err != nil && size == 0:
			result = lineResult{err: err}
		case size > limit:
			result = lineResult{err: &FrameTooLarge{Limit: limit, Bytes: size}}
		default:
			result = lineResult{frame: bytes.TrimSuffix(line, []byte("\r"))}
		}
		if result.err == nil && len(bytes.TrimSpace(result.frame)) == 0 {
			continue
		}
		select {
		case t.lines <- result:
		case <-t.closed:
			return
		}
		if err != nil && size == 0 {
			return
		}
	}
}

// Read waits for the next line.
func (t *LineTransport) Read(ctx context.Context) ([]byte, error) {
	t.readMu.Lock()
	if t.lines == nil {
		t.lines = make(chan lineResult)
		go t.readLines()
	}
	t.readMu.Unlock()
	select {
	case r := <-t.lines:
		return r.frame, r.err
	case <-t.closed:
		return nil, io.EOF
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Write writes the frame and a line feed. A frame holding a line break is refused: the peer
// would split it there.
func (t *LineTransport) Write(_ context.Context, frame []byte) error {
	select {
	case <-t.closed:
		return errors.New("the transport is closed")
	default:
	}
	if bytes.ContainsAny(frame, "\r\n") {
		return errors.New("a frame must not hold a line break")
	}
	out := make([]byte, 0, len(frame)+1)
	out = append(append(out, frame...), '\n')
	_, err := t.w.Write(out)
	return err
}

// Close stops reading and closes what the transport was made with.
func (t *LineTransport) Close() error {
	var err error
	t.closeOnce.Do(func() {
		close(t.closed)
		if t.closer != nil {
			err = t.closer()
		}
	})
	return err
}

// Pipe is two transports linked in memory: what one writes, the other reads. For tests
// and embedding.
func Pipe() (Transport, Transport) {
	ab := make(chan []byte, 64)
	ba := make(chan []byte, 64)
	done := make(chan struct{})
	var once sync.Once
	closeBoth := func() error {
		once.Do(func() { close(done) })
		return nil
	}
	return &pipeEnd{in: ba, out: ab, done: done, close: closeBoth}, &pipeEnd{in: ab, out: ba, done: done, close: closeBoth}
}

type pipeEnd struct {
	in, out chan []byte
	done    chan struct{}
	close   func() error
}

func (p *pipeEnd) Read(ctx context.Context) ([]byte, error) {
	select {
	case frame := <-p.in:
		return frame, nil
	case <-p.done:
		return nil, io.EOF
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (p *pipeEnd) Write(ctx context.Context, frame []byte) error {
	select {
	case <-p.done:
		return errors.New("the pipe is closed")
	default:
	}
	select {
	case p.out <- append([]byte(nil), frame...):
		return nil
	case <-p.done:
		return errors.New("the pipe is closed")
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (p *pipeEnd) Close() error { return p.close() }

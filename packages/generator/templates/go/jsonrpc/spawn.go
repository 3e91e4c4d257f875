package jsonrpc

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// ProcessTransport is a LineTransport to a child process over its standard input and
// output: a client's end of a server it runs. Closing it closes the child's input and,
// if the child has not ended within a grace period, kills it.
type ProcessTransport struct {
	*LineTransport
	cmd    *exec.Cmd
	stderr *tailBuffer
	waited chan struct{}
	werr   error
}

// Spawn starts cmd with its standard input and output as a line transport. Its standard
// error goes where cmd.Stderr says; when that is nil, its last lines are kept for Stderr.
func Spawn(cmd *exec.Cmd) (*ProcessTransport, error) {
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	p := &ProcessTransport{cmd: cmd, waited: make(chan struct{})}
	if cmd.Stderr == nil {
		p.stderr = &tailBuffer{limit: 16 << 10}
		cmd.Stderr = p.stderr
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("cannot start %s: %w", cmd.Path, err)
	}
	go func() {
		p.werr = cmd.Wait()
		close(p.waited)
	}()
	p.LineTransport = NewLineTransport(stdout, stdin, func() error {
		_ = stdin.Close()
		select {
		case <-p.waited:
		case <-time.After(2 * time.Second):
			_ = cmd.Process.Kill()
			<-p.waited
		}
		return nil
	})
	return p, nil
}

// Stderr is the end of what the child wrote to its standard error (when Spawn kept it).
func (p *ProcessTransport) Stderr() string {
	if p.stderr == nil {
		return ""
	}
	return p.stderr.String()
}

// Wait waits for the child to end and returns how it ended.
func (p *ProcessTransport) Wait(ctx context.Context) error {
	select {
	case <-p.waited:
		return p.werr
	case <-ctx.Done():
		return ctx.Err()
	}
}

// tailBuffer keeps the last limit bytes written to it.
type tailBuffer struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	limit int
}

func (t *tailBuffer) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf.Write(b)
	if extra := t.buf.Len() - t.limit; extra > 0 {
		t.buf.Next(extra)
	}
	return len(b), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(t.buf.String())
}

var _ io.Writer = (*tailBuffer)(nil)

package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"unicode/utf8"

	"turnspec.dev/agp"
	"turnspec.dev/agp/jsonrpc"
)

// runTool runs one tool call, with its item and its approval, and returns what the model is told.
func (g *gateway) runTool(t *turnState, call toolCall, cwd string, round int64) string {
	args := map[string]jsonrpc.Value{}
	if text := strings.TrimSpace(call.Function.Arguments); text != "" {
		parsed, err := jsonrpc.Parse([]byte(text))
		if err != nil || parsed.Kind() != jsonrpc.Object {
			return fmt.Sprintf("error: the arguments of %s are not a JSON object", call.Function.Name)
		}
		args = parsed.Map()
	}
	str := func(name string) (string, bool) {
		v, ok := args[name]
		return v.Str(), ok && v.Kind() == jsonrpc.String
	}
	id := newID("item_")
	summary := call.Function.Name + " " + call.Function.Arguments
	switch call.Function.Name {
	case "shell":
		command, ok := str("command")
		item := agp.TurnItemCommandExecution{ID: id, Status: agp.TurnItemStatusInProgress, Round: ptr(round), Command: command, Cwd: cwd, Arguments: args, ToolCallID: ptr(call.ID)}
		if !g.permitted(t, "shell", agp.PermissionActionKindShellCommand, args, summary) {
			return g.declined(t, id, item, summary)
		}
		if !ok {
			failed := item
			failed.Status, failed.Error, failed.Outcome = agp.TurnItemStatusFailed, &agp.TurnItemToolError{Message: "shell: the command argument is missing", Retryable: ptr(false)}, ptr(agp.TurnItemToolOutcomeError)
			_ = g.item(t, id, item, failed, nil)
			return "error: shell: the command argument is missing"
		}
		if err := g.itemStarted(t, id, item); err != nil {
			return "error: " + err.Error()
		}
		stdout, stderr, code, err := g.shell(t, id, command, cwd)
		done := item
		done.Stdout, done.Stderr = ptr(stdout), ptr(stderr)
		if err != nil {
			done.Status, done.Error, done.Outcome = agp.TurnItemStatusFailed, &agp.TurnItemToolError{Message: err.Error(), Retryable: ptr(false)}, ptr(agp.TurnItemToolOutcomeError)
		} else {
			done.ExitCode = jsonrpc.Some(int64(code))
			done.Status, done.Outcome, done.ToolResult = agp.TurnItemStatusCompleted, ptr(agp.TurnItemToolOutcomeSuccess), ptr(stdout)
			if code != 0 {
				done.Status, done.Outcome = agp.TurnItemStatusFailed, ptr(agp.TurnItemToolOutcomeError)
			}
		}
		if t.hasEnded() {
			return ""
		}
		_ = g.itemCompleted(t, id, done)
		if err != nil {
			return "error: " + err.Error()
		}
		if code != 0 {
			return fmt.Sprintf("exit code %d\n%s%s", code, stdout, stderr)
		}
		return stdout
	case "write_file":
		path, _ := str("path")
		content, _ := str("content")
		item := agp.TurnItemFileChange{ID: id, Status: agp.TurnItemStatusInProgress, Round: ptr(round), Path: path, ChangeKind: agp.TurnItemFileChangeChangeKindAdd, Arguments: args, ToolCallID: ptr(call.ID)}
		if !g.permitted(t, "write_file", agp.PermissionActionKindFileWrite, args, summary) {
			return g.declined(t, id, item, summary)
		}
		full, err := inside(cwd, path)
		kind := agp.TurnItemFileChangeChangeKindAdd
		if err == nil {
			if _, statErr := os.Stat(full); statErr == nil {
				kind = agp.TurnItemFileChangeChangeKindModify
			}
			item.ChangeKind = kind
			if err = os.MkdirAll(filepath.Dir(full), 0o755); err == nil {
				err = os.WriteFile(full, []byte(content), 0o644)
			}
		}
		done := item
		if err != nil {
			done.Status, done.Error, done.Outcome = agp.TurnItemStatusFailed, &agp.TurnItemToolError{Message: err.Error(), Retryable: ptr(false)}, ptr(agp.TurnItemToolOutcomeError)
			_ = g.item(t, id, item, done, nil)
			return "error: " + err.Error()
		}
		result := "wrote " + path
		done.Status, done.Outcome, done.Output, done.ToolResult = agp.TurnItemStatusCompleted, ptr(agp.TurnItemToolOutcomeSuccess), ptr(result), ptr(result)
		_ = g.item(t, id, item, done, nil)
		return result
	case "read_file":
		// A read is not a change: it has no item of its own.
		if !g.permitted(t, "read_file", agp.PermissionActionKindFileRead, args, summary) {
			return "error: the user refused " + summary + "; it did not run"
		}
		path, _ := str("path")
		full, err := inside(cwd, path)
		if err != nil {
			return "error: " + err.Error()
		}
		data, err := os.ReadFile(full)
		if err != nil {
			return "error: " + err.Error()
		}
		return string(data)
	}
	return fmt.Sprintf("error: there is no tool %q; the tools are shell, write_file and read_file", call.Function.Name)
}

// declined ends the item of a call the client refused (started, then declined) and tells the model.
func (g *gateway) declined(t *turnState, id string, item agp.TurnItem, summary string) string {
	if t.hasEnded() {
		return ""
	}
	refusal := "the user refused " + summary + "; it did not run"
	var done agp.TurnItem
	switch it := item.(type) {
	case agp.TurnItemCommandExecution:
		it.Status, it.Outcome, it.ToolResult = agp.TurnItemStatusDeclined, ptr(agp.TurnItemToolOutcomeDeclined), ptr(refusal)
		done = it
	case agp.TurnItemFileChange:
		it.Status, it.Outcome, it.ToolResult = agp.TurnItemStatusDeclined, ptr(agp.TurnItemToolOutcomeDeclined), ptr(refusal)
		done = it
	}
	_ = g.item(t, id, item, done, nil)
	return "error: " + refusal
}

// completeRunes is how much of b ends on a character boundary: a delta never splits a
// character, so that the deltas join up to the output.
func completeRunes(b []byte) int {
	for back := 1; back <= utf8.UTFMax && back <= len(b); back++ {
		start := len(b) - back
		if !utf8.RuneStart(b[start]) {
			continue
		}
		if utf8.FullRune(b[start:]) {
			return len(b)
		}
		return start
	}
	return len(b)
}

// inside is path within the folder, or an error naming it.
func inside(folder, path string) (string, error) {
	full := filepath.Join(folder, path)
	if filepath.IsAbs(path) {
		full = filepath.Clean(path)
	}
	rel, err := filepath.Rel(folder, full)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("%s is outside the thread's folder", path)
	}
	return full, nil
}

// shell runs a command with sh in cwd, its output streamed as the item's deltas as it comes.
// The turn's end kills it.
func (g *gateway) shell(t *turnState, id, command, cwd string) (stdout, stderr string, code int, err error) {
	cmd := exec.CommandContext(t.ctx, "sh", "-c", command)
	cmd.Dir = cwd
	outPipe, err := cmd.StdoutPipe()
	if err != nil {
		return "", "", 0, err
	}
	errPipe, err := cmd.StderrPipe()
	if err != nil {
		return "", "", 0, err
	}
	if err := cmd.Start(); err != nil {
		return "", "", 0, err
	}
	var out, errOut bytes.Buffer
	var mu sync.Mutex // one delta at a time, in the order read
	var wg sync.WaitGroup
	stream := func(r io.Reader, into *bytes.Buffer, kind agp.ItemDeltaStream) {
		defer wg.Done()
		buf := make([]byte, 32<<10)
		var held []byte // the start of a character a read cut in two
		for {
			n, readErr := r.Read(buf)
			chunk := append(held, buf[:n]...)
			cut := len(chunk)
			if readErr == nil {
				cut = completeRunes(chunk)
			}
			if cut > 0 {
				mu.Lock()
				into.Write(chunk[:cut])
				_ = g.delta(t, id, kind, string(chunk[:cut]))
				mu.Unlock()
			}
			held = append([]byte(nil), chunk[cut:]...)
			if readErr != nil {
				return
			}
		}
	}
	wg.Add(2)
	go stream(outPipe, &out, agp.ItemDeltaStreamStdout)
	go stream(errPipe, &errOut, agp.ItemDeltaStreamStderr)
	wg.Wait()
	waitErr := cmd.Wait()
	var exit *exec.ExitError
	if errors.As(waitErr, &exit) {
		return out.String(), errOut.String(), exit.ExitCode(), nil
	}
	return out.String(), errOut.String(), 0, waitErr
}

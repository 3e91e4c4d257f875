// Command go-client drives a gateway through one turn with the generated Go client: it starts
// the gateway as a child process over stdio, starts a thread and a supervised turn whose
// scripted model runs a shell command, approves the command when the gateway asks, and prints
// the turn as it streams until it ends.
//
//	go run ./examples/go-client                      # runs: npx turnspec serve --stdio --memory
//	TURNSPEC_STDIO_COMMAND="node bin/turnspec.js serve --stdio --memory" go run ./examples/go-client
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"turnspec.dev/agp"
	"turnspec.dev/agp/jsonrpc"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "go-client:", err)
		os.Exit(1)
	}
}

func run() error {
	command := strings.Fields(os.Getenv("TURNSPEC_STDIO_COMMAND"))
	if len(command) == 0 {
		command = []string{"npx", "turnspec", "serve", "--stdio", "--memory"}
	}
	transport, err := jsonrpc.Spawn(exec.Command(command[0], command[1:]...))
	if err != nil {
		return err
	}
	client := agp.NewClient(transport, nil, agp.ClientOptions{
		RequestTimeout: 30 * time.Second,
		OnProtocolError: func(err *jsonrpc.LocalError, frame []byte) {
			fmt.Fprintf(os.Stderr, "dropped a frame: %v\n", err)
		},
	})
	defer client.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	started, err := client.ThreadStart(ctx, agp.ThreadStartParams{})
	if err != nil {
		return fmt.Errorf("thread/start: %w", err)
	}

	// Notifications arrive on the goroutine that reads the connection: the handlers only hand
	// them over, and answering the permission request happens here.
	approvals := make(chan agp.TurnPermissionApprovalRequest, 1)
	ended := make(chan string, 1)
	client.OnItemStarted(func(n agp.ItemStartedNotification) {
		if item, ok := n.Item.(agp.TurnItemCommandExecution); ok {
			fmt.Printf("[commandExecution: %s]\n", item.Command)
		}
	})
	client.OnItemCommandExecutionOutputDelta(func(n agp.ItemDeltaNotification) { fmt.Print(n.Delta) })
	client.OnItemAgentMessageDelta(func(n agp.ItemDeltaNotification) { fmt.Print(n.Delta) })
	client.OnTurnPermissionRequestOpened(func(n agp.TurnPermissionRequestOpenedNotification) { approvals <- n.Request })
	client.OnTurnCompleted(func(n agp.TurnCompletedNotification) { ended <- string(n.Turn.Status) })
	client.OnTurnFailed(func(n agp.TurnFailedNotification) { ended <- string(n.Turn.Status) + ": " + n.Error.Message })

	// The gateway's default model is scripted: this input is its script.
	script, _ := json.Marshal(map[string]any{"script": []any{
		map[string]any{"tool": "shell", "args": map[string]any{"command": "echo hello"}},
		map[string]any{"say": "The command said hello.", "chunks": 3},
	}})
	supervised := agp.TurnPermissionModeSupervised
	turn, err := client.TurnStart(ctx, agp.TurnStartParams{
		ThreadID:          started.Thread.ID,
		TurnID:            fmt.Sprintf("trn_%d", time.Now().UnixNano()),
		Input:             []agp.UserInput{agp.UserInputText{Text: string(script)}},
		PermissionProfile: &agp.TurnPermissionProfileSelection{Mode: &supervised},
	})
	if err != nil {
		return fmt.Errorf("turn/start: %w", err)
	}
	for {
		select {
		case request := <-approvals:
			fmt.Printf("[approving %s: %s]\n", request.ToolName, request.Reason)
			if _, err := client.TurnPermissionRequestRespond(ctx, agp.TurnPermissionRequestRespondParams{
				RequestID:    request.RequestID,
				Resolution:   agp.TurnPermissionRequestRespondParamsResolutionAllowOnce,
				ResolveToken: request.ResolveToken,
			}); err != nil {
				return fmt.Errorf("turn/permission/request/respond: %w", err)
			}
		case status := <-ended:
			fmt.Printf("\n[%s]\n", status)
			if status != string(agp.TurnStatusCompleted) {
				return fmt.Errorf("turn %s ended %s", turn.Turn.ID, status)
			}
			return nil
		case <-client.Done():
			return fmt.Errorf("the gateway closed the connection: %s", transport.Stderr())
		case <-ctx.Done():
			return fmt.Errorf("turn %s did not end in time", turn.Turn.ID)
		}
	}
}

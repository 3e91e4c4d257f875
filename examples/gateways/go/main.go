// Command gateway is a gateway of the agent-gateway protocol written in Go on the module
// turnspec generates from the protocol's schemas (turnspec.dev/agp): the generated server over
// stdio, one OpenAI-compatible model, the three reference tools and supervised approvals,
// everything in memory. It claims two capabilities, core and permissions; the methods of the
// others are answered method_not_found.
//
//	go run ./examples/gateways/go --provider-url http://127.0.0.1:8080/v1
//	turnspec certify --gateway-cmd "go run ./examples/gateways/go --provider-url {provider_url}" --capabilities core,permissions
package main

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"turnspec.dev/agp"
	"turnspec.dev/agp/jsonrpc"
)

// maxFrameBytes is the largest frame read; a longer line is answered payload_too_large.
const maxFrameBytes = 4 << 20

func main() {
	providerURL := flag.String("provider-url", os.Getenv("TURNSPEC_PROVIDER_URL"), "base URL of an OpenAI-compatible model (ending in /v1)")
	model := flag.String("model", "go-gateway-model", "the model name sent with each call")
	flag.Parse()
	if *providerURL == "" {
		fmt.Fprintln(os.Stderr, "usage: gateway --provider-url URL [--model NAME]")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	transport := jsonrpc.Stdio()
	transport.MaxFrameBytes = maxFrameBytes
	g := newGateway(*providerURL, *model, &http.Client{Timeout: 10 * time.Minute})
	err := agp.Serve(ctx, transport, g.handlers, agp.ServerOptions{
		Incoming: jsonrpc.ValidateStrict,
		OnInternalError: func(err error, method string) {
			fmt.Fprintf(os.Stderr, "%s: %v\n", method, err)
		},
		OversizedReply: func(e *jsonrpc.FrameTooLarge) *jsonrpc.Error {
			return agp.ProtocolError(agp.ReasonPayloadTooLarge, e.Error(), jsonrpc.Member{Key: "limit", Value: jsonrpc.IntValue(int64(e.Limit))}, jsonrpc.Member{Key: "bytes", Value: jsonrpc.IntValue(int64(e.Bytes))})
		},
	})
	g.shutdown()
	// Standard input ended: the client is gone, and so is the gateway.
	if err != nil {
		fmt.Fprintln(os.Stderr, "gateway:", err)
		os.Exit(1)
	}
}

module turnspec.dev/examples/ws-both

go 1.23

require (
	github.com/coder/websocket v1.8.15
	turnspec.dev/examples/mcp v0.0.0
)

// The Go module generated from test/fixtures/mcp/schemas.
replace turnspec.dev/examples/mcp => ../../../fixtures/mcp/go

module turnspec.dev/examples/mcp-everything

go 1.23

require turnspec.dev/examples/mcp v0.0.0

require github.com/coder/websocket v1.8.15 // indirect

// The Go module generated from test/fixtures/mcp/schemas.
replace turnspec.dev/examples/mcp => ../../../fixtures/mcp/go

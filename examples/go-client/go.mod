module turnspec.dev/examples/go-client

go 1.23

require turnspec.dev/agp v0.0.0

require github.com/coder/websocket v1.8.15 // indirect

// The generated module of this protocol (turnspec generate --lang go --go-module turnspec.dev/agp).
replace turnspec.dev/agp => ../../test/languages/go/agp

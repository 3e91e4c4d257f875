module turnspec.dev/examples/gateways/go

go 1.23

require turnspec.dev/agp v0.0.0

require github.com/coder/websocket v1.8.15 // indirect

// The Go module generated from this protocol's schemas:
//   turnspec generate --lang go --schemas schemas --out test/languages/go/agp --go-module turnspec.dev/agp
replace turnspec.dev/agp => ../../../test/languages/go/agp

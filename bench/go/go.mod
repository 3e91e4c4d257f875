module turnspec.dev/bench/go

go 1.23

require turnspec.dev/agp v0.0.0

require github.com/coder/websocket v1.8.15 // indirect

// The Go module generated from this protocol's schemas.
replace turnspec.dev/agp => ../../test/languages/go/agp

/**
 * The golden Go modules read as careful Go: gofmt changes nothing in them, and go vet and go
 * build pass on every package (the protocol package, its jsonrpc support package and the
 * testee); so do the programs built on them. Slow: go vet type-checks about 50,000 lines for
 * this protocol.
 */
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { go, GO_AVAILABLE, GO_MODULES, gofmt, NO_GO } from "./go-toolchain.js";

const root = fileURLToPath(new URL("../..", import.meta.url));

if (!GO_AVAILABLE) console.log(NO_GO);

/** The programs built on the generated modules: the Go gateway, the example client, the benchmark and the test programs. */
const PROGRAMS = ["examples/gateways/go", "examples/go-client", "bench/go", "test/languages/go/mcp-everything", "test/languages/go/ws-both"];

describe.skipIf(!GO_AVAILABLE)("the programs built on the generated Go modules", () => {
  it.each(PROGRAMS)("%s is gofmt-clean and passes go vet", (program) => {
    const dir = join(root, program);
    expect(gofmt(["-l", "."], dir).trim(), "files gofmt would change").toBe("");
    go(["vet", "."], dir);
  }, 300_000);
});

describe.skipIf(!GO_AVAILABLE).each(Object.keys(GO_MODULES) as (keyof typeof GO_MODULES)[])("the Go module of %s", (name) => {
  const dir = join(root, GO_MODULES[name].module);

  it("is gofmt-clean", () => {
    expect(gofmt(["-l", "."], dir).trim(), "files gofmt would change").toBe("");
  }, 120_000);

  it("passes go vet and go build", () => {
    go(["vet", "./..."], dir);
    go(["build", "./..."], dir);
  }, 300_000);
});

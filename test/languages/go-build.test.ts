/**
 * The golden Go modules read as careful Go: gofmt changes nothing in them, and go vet and go
 * build pass on every package (the protocol package, its jsonrpc support package and the
 * testee). Slow: go vet type-checks about 50,000 lines for this protocol.
 */
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { go, GO_AVAILABLE, GO_MODULES, gofmt, NO_GO } from "./go-toolchain.js";

const root = fileURLToPath(new URL("../..", import.meta.url));

if (!GO_AVAILABLE) console.log(NO_GO);

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

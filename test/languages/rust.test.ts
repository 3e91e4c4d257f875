/**
 * The Rust output keeps the contract: the testee of each generated crate (its
 * `<crate>-testee` binary, built with cargo) answers every vector of this protocol and of the
 * mini, MCP and LSP fixtures as the TypeScript validators do: verdicts and error pointers in
 * both modes, canonical bytes out of a round trip through the Rust types and out of the
 * encoder, message findings, ordering violations. The agreement is printed; the failures still
 * known are listed in test/languages/rust/expected-failures.txt, which may only shrink. The
 * crates are the committed golden outputs, checked against the generator first.
 */
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { compareWithDisk, generateFiles } from "../../packages/generator/src/generate.js";
import { loadSchemas } from "../../packages/generator/src/load.js";
import { buildVectors } from "../../packages/generator/src/vectors/index.js";
import { describeMismatch, judge, readExpectedFailures, runHarness } from "./harness.js";
import { buildWorkspace, cargo, CARGO_AVAILABLE, NO_CARGO, root, RUST_CRATES } from "./rust-toolchain.js";

if (!CARGO_AVAILABLE) console.log(NO_CARGO);

describe.skipIf(!CARGO_AVAILABLE)("the Rust workspace", () => {
  it("is clean under cargo clippy -D warnings: the golden crates, the examples and the gateway", () => {
    cargo(["clippy", "--workspace", "--all-targets", "--locked", "--", "-D", "warnings"]);
  }, 600_000);

  it.skipIf(spawnSync("cargo", ["fmt", "--version"], { stdio: "ignore" }).status !== 0)("is left as it is by cargo fmt: the hand-written code is in rustfmt's layout, the generated modules are marked to be skipped", () => {
    cargo(["fmt", "--all", "--check"]);
  }, 60_000);
});

describe.each(Object.keys(RUST_CRATES) as (keyof typeof RUST_CRATES)[])("the Rust crate of %s", (protocol) => {
  const { schemas, crate, name } = RUST_CRATES[protocol];

  it("is what `turnspec generate --lang rust` writes, byte for byte", async () => {
    const files = await generateFiles({ schemasDir: join(root, schemas), lang: "rust", crateName: name });
    expect(compareWithDisk(files, join(root, crate)), `run: node bin/turnspec.js generate --lang rust --schemas ${schemas} --out ${crate} --crate-name ${name}`).toEqual([]);
  }, 60_000);

  it.skipIf(!CARGO_AVAILABLE)("answers every vector as the TypeScript validators do", async () => {
    const vectors = buildVectors(loadSchemas(join(root, schemas)));
    const testee = join(buildWorkspace(), `${name}-testee`);
    const report = await runHarness({ command: testee, args: [] }, vectors);
    const { unexpected, fixed, summary } = judge(report, readExpectedFailures(join(root, "test/languages/rust/expected-failures.txt"), protocol));
    console.log(`Rust, ${protocol}:\n${summary}`);
    expect(unexpected.slice(0, 20).map(describeMismatch)).toEqual([]);
    expect(fixed, "listed in test/languages/rust/expected-failures.txt but passing now: remove them").toEqual([]);
    expect(report.counts["validate/strict"].compared).toBe(vectors.types.length);
  }, 600_000);
});

import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import {
  CAPABILITIES,
  LEVELS,
  OUTCOMES,
  type Capability,
  type RequirementResult,
  type RunReport,
} from "../../../packages/conformance/src/results.js";
import {
  computeVerdict,
  ExpectedFailuresError,
  loadExpectedFailures,
  schemaHash,
  verdictOf,
  type ExpectedFailure,
  type Verdict,
} from "../../../packages/conformance/src/verdict.js";
import { result, smallExpected, smallReport, smallResults } from "./fixtures.js";

interface Row {
  results: RequirementResult[];
  capabilities?: Capability[];
  requested: RunReport["requestedLevel"];
  expected?: ExpectedFailure[];
  want: Partial<Verdict>;
}

const pass = (id: string, capability: Capability = "core") => result(id, capability, "MUST", "pass");
const fail = (id: string, capability: Capability = "core") => result(id, capability, "MUST", "fail", { message: "wrong" });
const error = (id: string, capability: Capability = "core") => result(id, capability, "MUST", "error", { message: "timed out" });
const listed = (id: string): ExpectedFailure => ({ id, reason: "known" });

const rows: [string, Row][] = [
  [
    "every MUST passes: Full, certified",
    {
      results: [pass("C1"), pass("P1", "permissions")],
      capabilities: ["permissions"],
      requested: "full",
      want: { claimed: ["core", "permissions"], achievedLevel: "full", certified: true, status: "certified", exitCode: 0 },
    },
  ],
  [
    "core passes, a claimed capability fails: Core, Full not certified",
    {
      results: [pass("C1"), fail("P1", "permissions")],
      capabilities: ["permissions"],
      requested: "full",
      want: { achievedLevel: "core", certified: false, status: "not_certified", failing: ["P1"], exitCode: 1 },
    },
  ],
  [
    "the same run asking for Core is certified",
    {
      results: [pass("C1"), fail("P1", "permissions")],
      capabilities: ["permissions"],
      requested: "core",
      want: { achievedLevel: "core", certified: true, exitCode: 0 },
    },
  ],
  [
    "a core MUST fails: none",
    {
      results: [fail("C1"), pass("P1", "permissions")],
      capabilities: ["permissions"],
      requested: "core",
      want: { achievedLevel: "none", certified: false, failing: ["C1"], exitCode: 1 },
    },
  ],
  [
    "an unclaimed capability's MUST does not count",
    {
      results: [pass("C1"), fail("R1", "routes")],
      capabilities: [],
      requested: "full",
      want: { achievedLevel: "full", certified: true, exitCode: 0 },
    },
  ],
  [
    "core counts as claimed when the list leaves it out",
    { results: [fail("C1")], capabilities: [], requested: "full", want: { achievedLevel: "none", certified: false, exitCode: 1 } },
  ],
  [
    "SHOULD and MAY failures never decide the level",
    {
      results: [pass("C1"), result("S1", "core", "SHOULD", "fail"), result("M1", "core", "MAY", "error")],
      requested: "full",
      want: { achievedLevel: "full", certified: true, exitCode: 0 },
    },
  ],
  [
    "a listed failure does not count against the level",
    {
      results: [fail("C1"), pass("C2")],
      requested: "core",
      expected: [listed("C1")],
      want: { achievedLevel: "full", certified: true, failing: [], exitCode: 0 },
    },
  ],
  [
    "a listed requirement that passes is stale and fails the run",
    {
      results: [pass("C1"), pass("C2")],
      requested: "core",
      expected: [listed("C2")],
      want: { achievedLevel: "full", certified: false, status: "not_certified", staleExpectedFailures: ["C2"], exitCode: 1 },
    },
  ],
  [
    "a listed SHOULD that passes is stale too",
    {
      results: [pass("C1"), result("S1", "core", "SHOULD", "pass")],
      requested: "core",
      expected: [listed("S1")],
      want: { certified: false, staleExpectedFailures: ["S1"], exitCode: 1 },
    },
  ],
  [
    "a listed id without a result is returned, not stale",
    {
      results: [pass("C1")],
      requested: "core",
      expected: [listed("GONE-1")],
      want: { certified: true, unmatchedExpectedFailures: ["GONE-1"], staleExpectedFailures: [], exitCode: 0 },
    },
  ],
  [
    "an error on a needed MUST: undetermined, exit 2",
    {
      results: [pass("C1"), error("C2")],
      requested: "core",
      want: { achievedLevel: "none", certified: false, status: "undetermined", undetermined: ["C2"], failing: [], exitCode: 2 },
    },
  ],
  [
    "an error on a claimed capability's MUST leaves Full undetermined, Core holds",
    {
      results: [pass("C1"), error("P1", "permissions")],
      capabilities: ["permissions"],
      requested: "full",
      want: { achievedLevel: "core", core: "pass", full: "undetermined", status: "undetermined", exitCode: 2 },
    },
  ],
  [
    "an error the requested level does not need is harmless",
    {
      results: [pass("C1"), error("P1", "permissions")],
      capabilities: ["permissions"],
      requested: "core",
      want: { certified: true, exitCode: 0 },
    },
  ],
  [
    "a failure beside an error: the gateway fails, exit 1",
    {
      results: [error("C1"), fail("P1", "permissions")],
      capabilities: ["permissions"],
      requested: "full",
      want: { status: "not_certified", failing: ["P1"], undetermined: ["C1"], exitCode: 1 },
    },
  ],
  [
    "a listed MUST that errors is still undetermined",
    {
      results: [error("C1")],
      requested: "core",
      expected: [listed("C1")],
      want: { status: "undetermined", staleExpectedFailures: [], exitCode: 2 },
    },
  ],
  [
    "a stale entry beside an error: exit 1",
    { results: [error("C1"), pass("C2")], requested: "core", expected: [listed("C2")], want: { status: "not_certified", exitCode: 1 } },
  ],
  [
    "a claimed capability's MUST that was not run is undetermined",
    {
      results: [pass("C1"), result("P1", "permissions", "MUST", "skipped")],
      capabilities: ["permissions"],
      requested: "full",
      want: { achievedLevel: "core", status: "undetermined", undetermined: ["P1"], exitCode: 2 },
    },
  ],
];

describe("computeVerdict", () => {
  it.each(rows)("%s", (_name, row) => {
    const verdict = computeVerdict(row.results, {
      capabilities: row.capabilities ?? [],
      requestedLevel: row.requested,
      expectedFailures: row.expected ?? [],
    });
    expect(verdict).toMatchObject(row.want);
  });

  it("marks listed results with the reason and clears marks the list does not make", () => {
    const verdict = computeVerdict([fail("C1"), { ...pass("C2"), expectedFailure: true, expectedFailureReason: "old" }], {
      capabilities: [],
      requestedLevel: "core",
      expectedFailures: [{ id: "C1", reason: "fold lands later" }],
    });
    expect(verdict.results.map((r) => [r.id, r.expectedFailure, r.expectedFailureReason])).toEqual([
      ["C1", true, "fold lands later"],
      ["C2", undefined, undefined],
    ]);
  });

  it("counts by outcome, by level and by capability", () => {
    const { counts } = computeVerdict(smallResults(), {
      capabilities: ["permissions", "routes"],
      requestedLevel: "full",
      expectedFailures: smallExpected,
    });
    expect(counts.all).toEqual({ total: 7, pass: 3, fail: 2, not_reached: 0, skipped: 1, error: 1, expected: 1 });
    expect(counts.byLevel.MUST).toEqual({ total: 5, pass: 2, fail: 2, not_reached: 0, skipped: 1, error: 0, expected: 1 });
    expect(counts.byLevel.SHOULD).toEqual({ total: 1, pass: 1, fail: 0, not_reached: 0, skipped: 0, error: 0, expected: 0 });
    expect(counts.byCapability.core.MUST).toEqual({ total: 2, pass: 1, fail: 1, not_reached: 0, skipped: 0, error: 0, expected: 1 });
    expect(counts.byCapability.routes.MAY).toEqual({ total: 1, pass: 0, fail: 0, not_reached: 0, skipped: 0, error: 1, expected: 0 });
    expect(counts.byCapability.windows.MUST.total).toBe(0);
  });

  it("verdictOf a finished report agrees with the verdict it was made from", () => {
    const report = smallReport();
    const verdict = verdictOf(report);
    expect([verdict.achievedLevel, verdict.certified, verdict.staleExpectedFailures]).toEqual([
      report.achievedLevel,
      report.certified,
      report.staleExpectedFailures,
    ]);
    expect(verdict.results).toEqual(report.results);
  });
});

describe("computeVerdict, over any run", () => {
  const anyRun = fc.record({
    results: fc.array(
      fc.record({
        capability: fc.constantFrom(...CAPABILITIES),
        level: fc.constantFrom(...LEVELS),
        outcome: fc.constantFrom(...OUTCOMES),
        listed: fc.boolean(),
      }),
      { maxLength: 12 },
    ),
    capabilities: fc.subarray([...CAPABILITIES]),
    requested: fc.constantFrom("core" as const, "full" as const),
  });
  type Run = typeof anyRun extends fc.Arbitrary<infer T> ? T : never;
  const verdictFor = (run: Run, override?: (r: RequirementResult, i: number) => RequirementResult, listedToo: number[] = []) => {
    const results = run.results
      .map((r, i) => result(`R${i}`, r.capability, r.level, r.outcome))
      .map((r, i) => (override ? override(r, i) : r));
    const expectedFailures = run.results.flatMap((r, i) => (r.listed || listedToo.includes(i) ? [listed(`R${i}`)] : []));
    return computeVerdict(results, { capabilities: run.capabilities, requestedLevel: run.requested, expectedFailures });
  };

  it("exits 0 exactly when certified, 2 only when nothing but errors or unrun MUSTs stand in the way", () => {
    fc.assert(
      fc.property(anyRun, (run) => {
        const v = verdictFor(run);
        expect(v.exitCode === 0).toBe(v.certified);
        if (v.exitCode === 2) expect([v.failing, v.staleExpectedFailures, v.undetermined.length > 0]).toEqual([[], [], true]);
        if (v.achievedLevel === "full") expect(v.core).toBe("pass");
        if (v.certified) expect(v.achievedLevel === "full" || (run.requested === "core" && v.achievedLevel === "core")).toBe(true);
      }),
    );
  });

  it("does not change when an unlisted SHOULD or MAY result changes outcome", () => {
    fc.assert(
      fc.property(anyRun, fc.constantFrom(...OUTCOMES), (run, outcome) => {
        const pick = (r: RequirementResult, i: number) => (r.level !== "MUST" && !run.results[i]!.listed ? { ...r, outcome } : r);
        const before = verdictFor(run);
        const after = verdictFor(run, pick);
        expect([after.achievedLevel, after.certified, after.exitCode]).toEqual([before.achievedLevel, before.certified, before.exitCode]);
      }),
    );
  });

  it("never lowers the level when one more failure is listed", () => {
    const rank = { none: 0, core: 1, full: 2 };
    fc.assert(
      fc.property(anyRun, fc.nat(), (run, n) => {
        const failures = run.results.flatMap((r, i) => (r.outcome === "fail" ? [i] : []));
        fc.pre(failures.length > 0);
        const before = verdictFor(run);
        const after = verdictFor(run, undefined, [failures[n % failures.length]!]);
        expect(rank[after.achievedLevel]).toBeGreaterThanOrEqual(rank[before.achievedLevel]);
      }),
    );
  });
});

describe("loadExpectedFailures", () => {
  const dir = mkdtempSync(join(tmpdir(), "turnspec-ef-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const file = (name: string, text: string) => {
    const path = join(dir, name);
    writeFileSync(path, text);
    return path;
  };

  it("returns the entries, unknown ids included", () => {
    const path = file(
      "ok.json",
      JSON.stringify({
        $schema: "./expected-failures.schema.json",
        expected_failures: [
          { id: "CORE-002", reason: "later" },
          { id: "NOPE-9", reason: "typo?" },
        ],
      }),
    );
    expect(loadExpectedFailures(path)).toEqual([
      { id: "CORE-002", reason: "later" },
      { id: "NOPE-9", reason: "typo?" },
    ]);
  });

  it.each([
    ["a missing reason", { expected_failures: [{ id: "A" }] }, "#/expected_failures/0/reason: is required"],
    [
      "an unknown field",
      { expected_failures: [{ id: "A", reason: "r", until: "1.0" }] },
      '#/expected_failures/0/until: is not a known field; got "1.0"',
    ],
    [
      "an empty id",
      { expected_failures: [{ id: "", reason: "r" }] },
      '#/expected_failures/0/id: must be at least 1 character long; got ""',
    ],
    ["a list that is not an array", { expected_failures: { id: "A" } }, "#/expected_failures: must be array"],
    [
      "a duplicate id",
      {
        expected_failures: [
          { id: "A", reason: "r" },
          { id: "A", reason: "s" },
        ],
      },
      '#/expected_failures/1/id: lists "A" again (first at /expected_failures/0/id)',
    ],
  ])("names the file and the JSON pointer of %s", (_name, value, where) => {
    const path = file("bad.json", JSON.stringify(value));
    expect(() => loadExpectedFailures(path)).toThrow(`${path}${where}`);
    expect(() => loadExpectedFailures(path)).toThrow(ExpectedFailuresError);
  });

  it("says when the file is missing or not JSON", () => {
    expect(() => loadExpectedFailures(join(dir, "none.json"))).toThrow(
      `cannot read the expected-failures file ${join(dir, "none.json")}: no such file`,
    );
    const path = file("text.json", "{ expected_failures: [] }");
    expect(() => loadExpectedFailures(path)).toThrow(`the expected-failures file ${path} is not valid JSON`);
  });
});

describe("schemaHash", () => {
  const dir = mkdtempSync(join(tmpdir(), "turnspec-hash-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("changes with a file's content or name, not with other files", () => {
    mkdirSync(join(dir, "a/meta"), { recursive: true });
    writeFileSync(join(dir, "a/x.json"), "{}");
    writeFileSync(join(dir, "a/meta/y.json"), "[]");
    const before = schemaHash(join(dir, "a"));
    expect(before).toMatch(/^[0-9a-f]{64}$/);
    writeFileSync(join(dir, "a/README.md"), "not a schema");
    expect(schemaHash(join(dir, "a"))).toBe(before);
    writeFileSync(join(dir, "a/meta/y.json"), "[ ]");
    expect(schemaHash(join(dir, "a"))).not.toBe(before);
    writeFileSync(join(dir, "a/meta/y.json"), "[]");
    expect(schemaHash(join(dir, "a"))).toBe(before);
    mkdirSync(join(dir, "b/meta"), { recursive: true });
    writeFileSync(join(dir, "b/x.json"), "{}");
    writeFileSync(join(dir, "b/meta/z.json"), "[]");
    expect(schemaHash(join(dir, "b"))).not.toBe(before);
  });

  it("hashes the project's schemas", () => {
    expect(schemaHash("schemas")).toMatch(/^[0-9a-f]{64}$/);
  });
});

describe("a partial run (--only/--skip)", () => {
  const notSelected = (id: string, capability: Capability = "core") =>
    result(id, capability, "MUST", "skipped", { message: "not selected by --only/--skip", skipReason: "not_selected" });
  const notReached = (id: string) => result(id, "core", "MUST", "not_reached", { message: "an earlier step failed" });
  it.each([
    [
      "every selected MUST passed",
      [pass("A"), notSelected("B"), notSelected("C", "permissions")],
      { status: "partial_pass", exitCode: 0, certified: false },
    ],
    ["a selected MUST failed", [fail("A"), notSelected("B")], { status: "partial_fail", exitCode: 1, failing: ["A"] }],
    [
      "a selected MUST errored",
      [pass("A"), error("D"), notSelected("B")],
      { status: "partial_undetermined", exitCode: 2, undetermined: ["D"] },
    ],
    [
      "a selected MUST was not reached after a failure",
      [fail("A"), notReached("E"), notSelected("B")],
      { status: "partial_fail", exitCode: 1 },
    ],
    [
      "a selected MUST was not reached, nothing failed",
      [pass("A"), notReached("E"), notSelected("B")],
      { status: "partial_undetermined", exitCode: 2, undetermined: ["E"] },
    ],
  ] as const)("%s: its own verdict and exit code", (_what, results, want) => {
    const verdict = computeVerdict(results, {
      capabilities: ["core", "permissions"],
      requestedLevel: "full",
      expectedFailures: [],
      partial: true,
    });
    expect(verdict).toMatchObject({ partial: true, certified: false, ...want });
  });

  it("the same results without --only/--skip leave the level undetermined", () => {
    expect(
      computeVerdict([pass("A"), notSelected("B")], { capabilities: ["core"], requestedLevel: "full", expectedFailures: [] }),
    ).toMatchObject({ status: "undetermined", exitCode: 2 });
  });
});

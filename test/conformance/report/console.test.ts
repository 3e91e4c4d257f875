import { describe, expect, it } from "vitest";
import { createConsoleReporter, type ConsoleStream } from "../../../packages/conformance/src/report/console.js";
import { formatCounts, formatDuration } from "../../../packages/conformance/src/report/format.js";
import type { RunReport } from "../../../packages/conformance/src/results.js";
import { certifiedReport, meta, smallReport, smallResults } from "./fixtures.js";
import { expectGolden } from "./golden.js";

function capture(isTTY = false): ConsoleStream & { text: () => string; writes: string[] } {
  const writes: string[] = [];
  return { isTTY, write: (text: string) => writes.push(text), writes, text: () => writes.join("") };
}

function run(stream: ConsoleStream, report: RunReport, env: Record<string, string | undefined> = {}) {
  const reporter = createConsoleReporter(stream, { env });
  const expectedFailures = report.results
    .filter((r) => r.expectedFailure)
    .map((r) => ({ id: r.id, reason: r.expectedFailureReason ?? "" }));
  reporter.onStart({ ...meta, capabilities: report.capabilities, requirementIds: report.results.map((r) => r.id), expectedFailures });
  return reporter;
}

describe("the console reporter", () => {
  it("prints a line per requirement and the summary (golden, no TTY)", () => {
    const out = capture();
    const reporter = run(out, smallReport());
    for (const result of smallResults()) reporter.onResult(result);
    reporter.onEnd(smallReport(), [
      { kind: "json", path: "out/report.json" },
      { kind: "junit", path: "out/junit.xml" },
      { kind: "html", path: "out/report.html" },
    ]);
    expectGolden("console-small.txt", out.text());
  });

  it("says certified for a certified run (golden)", () => {
    const out = capture();
    const report = certifiedReport();
    const reporter = run(out, report);
    for (const result of report.results) reporter.onResult(result);
    reporter.onEnd(report);
    expectGolden("console-certified.txt", out.text());
  });

  it("writes each result as it comes in, before the run ends", () => {
    const out = capture();
    const reporter = run(out, smallReport());
    const before = out.writes.length;
    reporter.onResult(smallResults()[1]!);
    expect(out.writes.slice(before).join("")).toBe(
      "✗ CORE-002   MUST     40 ms  The gateway honours CORE-002.  expected failure\n" +
        '    turn/get answered status "Running"; expected "Completed" after turn/completed\n',
    );
  });

  it.each([
    ["a TTY", true, {}, true],
    ["a TTY with NO_COLOR set", true, { NO_COLOR: "1" }, false],
    ["a TTY with NO_COLOR empty", true, { NO_COLOR: "" }, true],
    ["a pipe", false, {}, false],
  ])("colours on %s: %s", (_name, isTTY, env, coloured) => {
    const out = capture(isTTY);
    const reporter = run(out, smallReport(), env);
    reporter.onResult(smallResults()[0]!);
    reporter.onEnd(smallReport());
    expect(out.text().includes("\u001b[")).toBe(coloured);
  });

  it("colours marks and the verdict on a TTY", () => {
    const out = capture(true);
    const reporter = run(out, smallReport());
    reporter.onResult(smallResults()[0]!);
    reporter.onEnd(smallReport());
    expect(out.text()).toContain("\u001b[32m✓\u001b[39m CORE-001");
    expect(out.text()).toContain("\u001b[31m\u001b[1mNot certified\u001b[22m\u001b[39m: level Core achieved");
  });

  it("says a run was undetermined when errors stand in the way", () => {
    const out = capture();
    const report = certifiedReport();
    const errored: RunReport = {
      ...report,
      certified: false,
      achievedLevel: "none",
      results: report.results.map((r) => (r.id === "CORE-001" ? { ...r, outcome: "error", message: "timed out" } : r)),
    };
    run(out, errored).onEnd(errored);
    expect(out.text()).toContain("Not determined (harness error or not run): CORE-001\n");
    expect(out.text()).toContain(
      "Could not be determined: level none achieved, Full requested; MUSTs it needs errored, were not reached or were not run\n",
    );
  });

  it("leads with the gateway's stop, once, and names what it left not reached", () => {
    const out = capture();
    const report = certifiedReport();
    const stopped: RunReport = {
      ...report,
      certified: false,
      achievedLevel: "none",
      stopped: {
        summary: "the gateway exited with code 1",
        exitCode: 1,
        stderr: "Traceback (most recent call last):\nValueError: not JSON",
        after: { frame: '{"jsonrpc": "2.0", "id": 1, "method": ', atMs: 40, scenario: "JSON-RPC errors", requirement: "CORE-001" },
        inFlight: [{ id: 3, method: "thread/start", scenario: "threads" }],
        requirement: "CORE-001",
        notReached: 1,
      },
      results: report.results.map((r) =>
        r.id === "CORE-001"
          ? { ...r, outcome: "fail", message: "the gateway exited with code 1" }
          : r.id === "PERM-001"
            ? { ...r, outcome: "not_reached", message: "the gateway exited with code 1 (reported under CORE-001)" }
            : r,
      ),
    };
    const reporter = run(out, stopped);
    reporter.onStop(stopped.stopped!);
    for (const result of stopped.results) reporter.onResult(result);
    reporter.onEnd(stopped);
    const text = out.text();
    expect(text).toContain(
      'The gateway exited with code 1 after the suite sent (in "JSON-RPC errors", CORE-001):\n    {"jsonrpc": "2.0", "id": 1, "method": \n',
    );
    expect(text).toContain('    unanswered: thread/start (id 3, from "threads")\n');
    expect(text).toContain("    Reported as a failure of CORE-001; 1 requirement was not reached because of it.\n");
    expect(text.split("ValueError: not JSON")).toHaveLength(2);
    expect(text.indexOf("The gateway exited")).toBeLessThan(text.indexOf("CORE-001 "));
    expect(text).toMatch(/^○ PERM-001 +MUST +not reached: the gateway exited with code 1 \(reported under CORE-001\)$/m);
    expect(text).toContain("MUSTs not reached (because the gateway exited with code 1, reported under CORE-001): PERM-001\n");
  });
});

describe("console formatting", () => {
  it.each([
    [0.4, "0 ms"],
    [999, "999 ms"],
    [1000, "1 s"],
    [1540, "1.5 s"],
    [125_000, "2 min 5 s"],
  ])("formatDuration(%s) = %s", (ms, text) => {
    expect(formatDuration(ms)).toBe(text);
  });

  it("leaves zero counts out", () => {
    expect(formatCounts({ total: 0, pass: 0, fail: 0, not_reached: 0, skipped: 0, error: 0, expected: 0 })).toBe("none");
    expect(formatCounts({ total: 5, pass: 2, fail: 2, not_reached: 0, skipped: 0, error: 1, expected: 1 })).toBe(
      "2 passed, 2 failed (1 expected), 1 error",
    );
    expect(formatCounts({ total: 6, pass: 2, fail: 1, not_reached: 3, skipped: 0, error: 0, expected: 0 })).toBe(
      "2 passed, 1 failed, 3 not reached",
    );
  });
});

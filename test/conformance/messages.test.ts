/**
 * What a certification report says about a broken gateway: every message of the suite,
 * run against each broken gateway of broken-gateways.ts, reads as text (no `undefined`,
 * no `null` or `NaN` standing for a missing value, no `[object Object]`, no colon with
 * nothing after it); a gateway that crashes is told once, as the cause, with what it left
 * not reached; a method the gateway answers with -32601 is reported as exactly that.
 */
import { spawnSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { loadCatalogue } from "../../packages/conformance/src/catalogue.js";
import { runCertification } from "../../packages/conformance/src/certify.js";
import type { RunReport } from "../../packages/conformance/src/results.js";
import { BROKEN, startBrokenGateway, type BrokenGatewayName } from "./broken-gateways.js";
import { CLAIMED } from "./reference.js";

const all = new Set(loadCatalogue().map((r) => r.id));

/** The ways a message can show a value it never had; each returns the offending part, if any. */
const PLACEHOLDERS: readonly [string, (message: string) => string | undefined][] = [
  ["undefined", (m) => /.{0,40}\bundefined\b.{0,20}/.exec(m)?.[0]],
  ["NaN", (m) => /.{0,40}\bNaN\b.{0,20}/.exec(m)?.[0]],
  ["[object Object]", (m) => /.{0,40}\[object Object\].{0,20}/.exec(m)?.[0]],
  // null as a JSON value ("id":null, [null]) is what the gateway sent, and "JSON null" says so; null as a word stands for a missing value.
  ["null as text", (m) => /.{0,40}(?<![:[,]\s?|JSON )\bnull\b(?!\s?[,}\]])(?! id\b).{0,20}/.exec(m.replaceAll('"null"', ""))?.[0]],
  ["a colon with nothing after it", (m) => /.{0,40}:[ \t]*(?:$|[;,)])/m.exec(m)?.[0]],
];

/** Every placeholder in the messages of a report, as "ID: what (where)". */
function placeholders(report: RunReport): string[] {
  const found: string[] = [];
  for (const r of report.results) {
    if (r.message === undefined) continue;
    for (const [what, find] of PLACEHOLDERS) {
      const at = find(r.message);
      if (at !== undefined) found.push(`${r.id} (${r.outcome}): ${what} in …${at}…`);
    }
  }
  return found;
}

async function certify(name: BrokenGatewayName): Promise<RunReport> {
  const broken = await startBrokenGateway(name);
  try {
    return await runCertification({
      transport: broken.transport,
      model: broken.model,
      capabilities: CLAIMED,
      level: "full",
      selected: all,
      expectedFailures: [],
      quietMs: 1000,
    });
  } finally {
    await broken.close();
  }
}

/** Runs `work` over `items`, `width` at a time (the runs mostly wait: several side by side cost little). */
async function inBatches<T, R>(items: readonly T[], width: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = [];
  for (let i = 0; i < items.length; i += width) out.push(...(await Promise.all(items.slice(i, i + width).map(work))));
  return out;
}

describe("the messages of a run against each broken gateway", () => {
  const names = Object.keys(BROKEN) as BrokenGatewayName[];
  const reports = new Map<BrokenGatewayName, RunReport>();
  const report = async (name: BrokenGatewayName) => {
    if (reports.size === 0) for (const [i, r] of (await inBatches(names, 3, certify)).entries()) reports.set(names[i]!, r);
    return reports.get(name)!;
  };

  it.each(names)(
    "%s: no message holds a placeholder",
    async (name) => {
      const r = await report(name);
      expect(r.results.some((x) => x.outcome === "fail")).toBe(true);
      expect(placeholders(r)).toEqual([]);
    },
    600_000,
  );

  it("a gateway that does not implement turn/resume is reported as that, under the requirement that resumes", async () => {
    const r = await report("no-turn-resume");
    const resume = r.results.find((x) => x.id === "TURN-RESUME-NOT-BLOCKED")!;
    expect(resume).toMatchObject({ outcome: "fail", message: "the gateway does not implement turn/resume (-32601)" });
    expect(r.results.filter((x) => x.outcome === "error")).toEqual([]);
    expect(r.results.filter((x) => x.message?.includes("unscripted model call"))).toEqual([]);
  }, 600_000);

  it("a gateway that does not implement turn/items is reported as that, under each requirement that reads it, never as a harness error", async () => {
    const r = await report("no-turn-items");
    for (const id of ["TURN-ITEMS-REPLAY", "TURN-ITEMS-LAST-SEQUENCE"])
      expect(r.results.find((x) => x.id === id)).toMatchObject({
        outcome: "fail",
        message: "the gateway does not implement turn/items (-32601)",
      });
    expect(r.results.filter((x) => x.outcome === "error").map((x) => `${x.id}: ${x.message}`)).toEqual([]);
  }, 600_000);

  it("a gateway that closes the connection on a parse-error probe is the run's stop: one failure, the rest not reached", async () => {
    const r = await report("crashes-on-parse-error");
    expect(r.stopped).toMatchObject({
      summary: "the gateway closed the connection",
      requirement: "RPC-PARSE-ERROR",
      after: { frame: '{"jsonrpc": "2.0", "id": 1, "method": ' },
    });
    expect(r.results.filter((x) => x.outcome === "fail").map((x) => x.id)).toEqual(["RPC-PARSE-ERROR"]);
    const notReached = r.results.filter((x) => x.outcome === "not_reached");
    expect(notReached.length).toBe(r.stopped!.notReached);
    expect(notReached.length).toBeGreaterThan(20);
    for (const x of notReached) expect(x.message).toContain("the gateway closed the connection (reported under RPC-PARSE-ERROR)");
    expect(r.status).toBe("not_certified");
  }, 600_000);
});

describe("a gateway process that crashes on the parse-error probe", () => {
  it("leads the console with the exit, the frame that preceded it and its traceback, once; the rest is not reached", () => {
    const run = spawnSync(
      "node",
      [
        "bin/turnspec.js",
        "certify",
        "--gateway-cmd",
        "node --import tsx test/conformance/broken-gateway-stdio.ts crashes-on-parse-error --provider-url {provider_url}",
        "--capabilities",
        "core",
        "--level",
        "core",
      ],
      { encoding: "utf8", timeout: 300_000 },
    );
    const out = run.stdout;
    expect(out).toMatch(
      /^The gateway exited with code 1 after the suite sent \(in "JSON-RPC errors", RPC-PARSE-ERROR\):\n {4}\{"jsonrpc": "2\.0", "id": 1, "method": \n/m,
    );
    expect(out.split("json.decoder.JSONDecodeError")).toHaveLength(2);
    expect(out).toMatch(/Reported as a failure of RPC-PARSE-ERROR; \d+ requirements were not reached because of it\./);
    // The headline comes before the results it decides.
    expect(out.indexOf("The gateway exited with code 1")).toBeLessThan(out.search(/^✗ RPC-PARSE-ERROR /m));
    expect(out).toMatch(/^○ THREAD-NOT-FOUND +MUST +not reached: the gateway exited with code 1 \(reported under RPC-PARSE-ERROR\)$/m);
    expect(out.match(/^✗ /gm)).toHaveLength(1);
    expect(out).toContain("Not certified");
    expect(run.status).toBe(1);
  });
});

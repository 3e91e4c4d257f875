/**
 * Versioned suites: the catalogue's history (since which version each requirement exists,
 * when its level or capability changed, which checks grew stricter), the requirement set of
 * an earlier version, the numbering rule, `--changes` computed from the catalogue, and an
 * earlier version certifying what the reference gateway did then.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { CATALOGUE_FILE, CatalogueError, loadSuite, requirementsAt, suiteChanges } from "../../packages/conformance/src/catalogue.js";
import { certifyWrapped } from "./wrapped.js";

const suite = loadSuite();
const at = (version: string, id: string) => requirementsAt(suite, version).find((r) => r.id === id);

describe("the catalogue's versions", () => {
  it("holds each earlier version's requirements with the level and capability they had then", () => {
    expect(suite.versions.map((v) => v.version)).toEqual(["1.0", "2.0", "3.0", "4.0", "5.0", "5.1", "6.0", "7.0", "8.0"]);
    expect(requirementsAt(suite, "1.0")).toHaveLength(87);
    expect(at("1.0", "TURN-BACKEND-UNAVAILABLE")).toBeUndefined();
    expect(at("2.0", "TURN-BACKEND-UNAVAILABLE")).toMatchObject({ level: "MUST", capability: "core", since: "2.0" });
    expect(at("2.0", "TURN-CAPABILITY-NOT-FOUND")).toMatchObject({ level: "MUST", capability: "core" });
    expect(at("2.0", "PERM-GRANT-TURN-SCOPED")?.level).toBe("SHOULD");
    expect(at("3.0", "PERM-GRANT-TURN-SCOPED")?.level).toBe("MUST");
    expect(at("4.0", "TURN-QUESTION-OPEN")?.capability).toBe("permissions");
    expect(at("5.0", "TURN-QUESTION-OPEN")?.capability).toBe("surface");
    expect(at("4.0", "TURN-ORDER-COMPACTED-FIRST")?.capability).toBe("core");
    expect(at("5.0", "TURN-ORDER-COMPACTED-FIRST")?.capability).toBe("windows");
    expect(at("6.0", "TURN-QUESTION-CANCEL")).toBeUndefined();
    expect(requirementsAt(suite, suite.current)).toEqual(suite.requirements);
    expect(() => requirementsAt(suite, "2.5")).toThrow(
      "unknown suite version 2.5; the versions are 1.0, 2.0, 3.0, 4.0, 5.0, 5.1, 6.0, 7.0, 8.0",
    );
  });

  it("lists what changed between two versions, the added MUSTs among them, marking what may fail an earlier certification", () => {
    const { versions, changes } = suiteChanges(suite, "1.0", "2.0");
    expect(versions.map((v) => v.version)).toEqual(["2.0"]);
    expect(changes.map((c) => [c.id, c.kind, c.breaking])).toEqual([
      ["TURN-BACKEND-UNAVAILABLE", "added", true],
      ["TURN-CAPABILITY-NOT-FOUND", "added", true],
    ]);
    const later = suiteChanges(suite, "4.0", "5.1").changes;
    expect(later.find((c) => c.id === "TURN-ORDER-COMPACTED-FIRST")).toMatchObject({
      kind: "capability",
      text: "core → windows (MUST)",
      breaking: true,
    });
    expect(later.find((c) => c.id === "TURN-QUESTION-OPEN")).toMatchObject({ kind: "capability", breaking: false });
    expect(later.find((c) => c.id === "TURN-QUESTION-EXPIRE")).toMatchObject({ kind: "added", breaking: false });
  });

  it("`turnspec certify --changes FROM` prints them, from the catalogue", () => {
    const run = spawnSync("node", ["bin/turnspec.js", "certify", "--changes", "1.0", "--suite", "3.0"], { encoding: "utf8" });
    expect(run.status).toBe(0);
    expect(run.stdout).toContain("turnspec suite 1.0 → 3.0: 5 changes in 2 versions");
    expect(run.stdout).toMatch(/^ {2}! added {2}TURN-BACKEND-UNAVAILABLE +MUST of core: /m);
    expect(run.stdout).toMatch(/^ {2}! level {2}PERM-GRANT-TURN-SCOPED +SHOULD → MUST \(permissions\)$/m);
    expect(run.stdout).toContain("MUSTs added since 1.0: TURN-BACKEND-UNAVAILABLE (2.0), TURN-CAPABILITY-NOT-FOUND (2.0)");
    const explained = spawnSync("node", ["bin/turnspec.js", "certify", "--explain", "PERM-GRANT-TURN-SCOPED", "--suite", "2.0"], {
      encoding: "utf8",
    });
    expect(explained.stdout).toContain("PERM-GRANT-TURN-SCOPED (SHOULD, capability permissions)");
    expect(explained.stdout).toContain("since: suite 1.0; SHOULD → MUST in 3.0");
    const later = spawnSync("node", ["bin/turnspec.js", "certify", "--explain", "TURN-QUESTION-SURFACED", "--suite", "5.0"], {
      encoding: "utf8",
    });
    expect([later.status, later.stderr]).toEqual([
      2,
      "turnspec certify: --explain: TURN-QUESTION-SURFACED is not in suite 5.0: it was added in 6.0\n",
    ]);
    const absent = spawnSync(
      "node",
      ["bin/turnspec.js", "certify", "--suite", "4.0", "--capabilities", "core,surface", "--gateway-cmd", "true"],
      { encoding: "utf8" },
    );
    expect([absent.status, absent.stderr]).toEqual([
      2,
      "turnspec certify: --capabilities: suite 4.0 has no surface capability; its capabilities are core, permissions, routes, work, windows, recovery\n",
    ]);
    const wrong = spawnSync("node", ["bin/turnspec.js", "certify", "--changes", "0.9"], { encoding: "utf8" });
    expect(wrong.status).toBe(2);
    expect(wrong.stderr).toContain("--changes: unknown suite version 0.9");
  });

  const broken: [string, (c: Catalogue) => void, string][] = [
    [
      "a MUST added under a minor version",
      (c) => {
        c.versions[1]!.version = "1.1";
        renumber(c, { "2.0": "1.1" });
      },
      "#/versions/1/version: 1.1 should be 2.0: it may fail what 1.0 certified (TURN-BACKEND-UNAVAILABLE: added, TURN-CAPABILITY-NOT-FOUND: added)",
    ],
    [
      "a SHOULD added under a major version",
      (c) => {
        const map: Record<string, string> = { "5.1": "6.0", "6.0": "7.0", "7.0": "8.0", "8.0": "9.0" };
        for (const v of c.versions) v.version = map[v.version] ?? v.version;
        renumber(c, map);
      },
      "#/versions/5/version: 6.0 should be 5.1: nothing in it may fail what 5.0 certified",
    ],
    [
      "a level its changes do not lead to",
      (c) => void (requirement(c, "PERM-GRANT-TURN-SCOPED").level = "SHOULD"),
      "/level: PERM-GRANT-TURN-SCOPED is SHOULD, but its last level change leaves it MUST",
    ],
    [
      "two changes in one version",
      (c) => void requirement(c, "ITEM-COMPLETED-ONCE").changes!.push({ version: "7.0", level: { from: "MUST", to: "SHOULD" } }),
      "/changes/2/version: a change of ITEM-COMPLETED-ONCE in 7.0 must come after 7.0",
    ],
    [
      "a since naming no version",
      (c) => void (requirement(c, "TURN-GET").since = "1.5"),
      "/since: TURN-GET names suite version 1.5, which the catalogue does not list",
    ],
  ];
  it.each(broken)("refuses a history that does not hold together: %s", (_name, edit, message) => {
    const catalogue = JSON.parse(readFileSync(CATALOGUE_FILE, "utf8")) as Catalogue;
    edit(catalogue);
    const file = join(mkdtempSync(join(tmpdir(), "turnspec-versions-")), "requirements.json");
    writeFileSync(file, JSON.stringify(catalogue));
    expect(() => loadSuite(file)).toThrow(CatalogueError);
    expect(() => loadSuite(file)).toThrow(message);
  });
});

type Catalogue = {
  versions: { version: string }[];
  requirements: { id: string; since: string; level: string; changes?: { version: string; level?: { from: string; to: string } }[] }[];
};
const requirement = (c: Catalogue, id: string) => c.requirements.find((r) => r.id === id)!;
function renumber(c: Catalogue, map: Record<string, string>): void {
  for (const r of c.requirements) {
    r.since = map[r.since] ?? r.since;
    for (const change of r.changes ?? []) change.version = map[change.version] ?? change.version;
  }
}

describe("certifying against an earlier suite version", () => {
  /** The reference gateway as it was before execution backends: what turn/start names of backends and capabilities it does not read. */
  const beforeBackends = {
    in(frame: { method?: string; params?: Record<string, unknown> }, pass: (frame: never) => void) {
      if (frame.method !== "turn/start") return pass(frame as never);
      const { execution_backend: _backend, capabilities: _capabilities, ...params } = frame.params!;
      pass({ ...frame, params } as never);
    },
  };

  it("the current suite fails the earlier behaviour on the MUSTs 2.0 added; suite 1.0 certifies it, and its report names 1.0", async () => {
    const current = await certifyWrapped(beforeBackends, { patterns: ["*"], capabilities: ["core"], level: "core" });
    expect(current.failed).toEqual(["TURN-BACKEND-UNAVAILABLE", "TURN-CAPABILITY-NOT-FOUND"]);
    expect(current.report.suite.version).toBe(suite.current);

    const earlier = await certifyWrapped(beforeBackends, { patterns: ["*"], capabilities: ["core"], level: "core", suite: "1.0" });
    expect(earlier.failed).toEqual([]);
    expect(
      earlier.report.results.filter((r) => r.outcome !== "pass" && r.outcome !== "skipped").map((r) => `${r.id}: ${r.message}`),
    ).toEqual([]);
    expect(earlier.report).toMatchObject({ certified: true, status: "certified", suite: { name: "turnspec", version: "1.0" } });
    expect(earlier.report.results.map((r) => r.id)).toEqual(requirementsAt(suite, "1.0").map((r) => r.id));
  });
});

/**
 * The requirement catalogue and its coverage: every requirement has a check, every method
 * and notification names a requirement, and protocol.json names no id the catalogue lacks.
 */
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { orderingRules } from "../../generated/ordering.js";
import { CatalogueError, loadCatalogue, protocolEntries, selectIds } from "../../packages/conformance/src/catalogue.js";
import { checkSources } from "../../packages/conformance/src/certify.js";
import { scenarios } from "../../packages/conformance/src/scenarios/index.js";
import { clientScenarios } from "../../packages/conformance/src/client/scenarios.js";

const catalogue = loadCatalogue();
const ids = new Set(catalogue.map((r) => r.id));

/**
 * Requirements without a check yet, each with why. The test fails when one of them gains
 * a check, so the list cannot silently go stale.
 */
const NOT_YET_CHECKED: Record<string, string> = {};

describe("the requirement catalogue", () => {
  it("declares 60 to 110 gateway requirements and a client capability of its own, with unique ids, each tied to a reference section", () => {
    const gateway = catalogue.filter((r) => r.capability !== "client");
    expect(gateway.length).toBeGreaterThanOrEqual(60);
    expect(gateway.length).toBeLessThanOrEqual(110);
    expect(catalogue.filter((r) => r.capability === "client").every((r) => r.id.startsWith("CLIENT-"))).toBe(true);
    expect(gateway.some((r) => r.id.startsWith("CLIENT-"))).toBe(false);
    expect(ids.size).toBe(catalogue.length);
    for (const r of catalogue) expect(r.reference.file).toMatch(/\.md$/);
  });

  it("refers every requirement to a section that exists in what turnspec ships: PROTOCOL.md or a guide under docs/", () => {
    const headings = (file: string) =>
      new Set(
        [
          ...readFileSync(join(import.meta.dirname, "../..", file === "PROTOCOL.md" ? "generated/PROTOCOL.md" : file), "utf8").matchAll(
            /^#{1,6} (.+)$/gm,
          ),
        ].map((m) => m[1]!.trim()),
      );
    const missing = catalogue
      .filter((r) => !headings(r.reference.file).has(r.reference.section))
      .map((r) => `${r.id}: ${r.reference.file} "${r.reference.section}"`);
    expect(missing).toEqual([]);
  });

  it("has a check for every requirement, except the documented ones, and those have none", () => {
    const sources = checkSources();
    const unchecked = catalogue.filter((r) => !sources.has(r.id)).map((r) => r.id);
    expect(unchecked.sort()).toEqual(Object.keys(NOT_YET_CHECKED).sort());
  });

  it("says for every requirement what its check observes, and --explain shows that text", () => {
    const sources = checkSources();
    for (const r of catalogue) {
      expect(r.observes.length, r.id).toBeGreaterThan(20);
      expect(
        sources.get(r.id)?.some((s) => s.does.startsWith(r.observes)),
        r.id,
      ).toBe(true);
    }
  });

  it("links every method and notification of protocol.json to requirements the catalogue has", () => {
    for (const entry of protocolEntries()) {
      expect(entry.requirements ?? [], `${entry.name} names no requirement`).not.toHaveLength(0);
      for (const id of entry.requirements ?? []) expect(ids.has(id), `${entry.name} names ${id}, which the catalogue lacks`).toBe(true);
    }
  });

  it("checks only requirements of the catalogue: scenarios and ordering rules alike", () => {
    for (const s of scenarios)
      for (const id of s.checks) expect(ids.has(id) && !id.startsWith("CLIENT-"), `scenario "${s.name}" checks unknown ${id}`).toBe(true);
    for (const s of clientScenarios)
      for (const id of s.checks) expect(id.startsWith("CLIENT-") && ids.has(id), `client scenario "${s.name}" checks ${id}`).toBe(true);
    for (const rule of orderingRules) expect(ids.has(rule.requirement), `ordering rule ${rule.id}`).toBe(true);
  });

  it("stops on a catalogue that breaks its schema, naming the file and the pointer", () => {
    const file = join(mkdtempSync(join(tmpdir(), "turnspec-catalogue-")), "requirements.json");
    const versions = [{ version: "1.0", date: "2026-11-30", summary: "The first catalogue." }];
    writeFileSync(
      file,
      JSON.stringify({
        versions,
        requirements: [
          {
            id: "TURN-X",
            level: "MUSTN'T",
            capability: "core",
            since: "1.0",
            statement: "A statement long enough.",
            observes: "What the check observes.",
            reference: { file: "a.md", section: "s" },
          },
        ],
      }),
    );
    expect(() => loadCatalogue(file)).toThrow(CatalogueError);
    expect(() => loadCatalogue(file)).toThrow(`${file}#/requirements/0/level`);
    const { covers: _covers, changes: _changes, ...first } = catalogue[0]!;
    writeFileSync(file, JSON.stringify({ versions, requirements: [first, first] }));
    expect(() => loadCatalogue(file)).toThrow(`${file}#/requirements/1/id: "${catalogue[0]!.id}" is declared twice`);
  });

  it.each([
    [["PERM-*"], (id: string) => id.startsWith("PERM-"), []],
    [["turn-get"], (id: string) => id === "TURN-GET", []],
    [["ROUTE-RE?OKE"], (id: string) => id === "ROUTE-REVOKE", []],
    [["NOPE-*", "TURN-GET"], (id: string) => id === "TURN-GET", ["NOPE-*"]],
  ] as const)("selects ids by pattern %j", (patterns, want, unmatched) => {
    const selected = selectIds(patterns, [...ids]);
    expect([...selected.ids].sort()).toEqual([...ids].filter(want).sort());
    expect(selected.unmatched).toEqual(unmatched);
  });
});

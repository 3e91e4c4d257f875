/**
 * The requirement catalogue: `conformance/requirements.json`, checked against its schema,
 * joined with the methods and notifications protocol.json links to each id (as the
 * generated registry carries them). The catalogue is versioned: it lists the suite's
 * versions, and each requirement says since which version it exists and what later ones
 * changed in it (its level, its capability, a stricter check). The requirement set of any
 * version, and what changed between two, are computed from that.
 */
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import Ajv2020 from "ajv/dist/2020.js";
import { methods, notifications } from "@turnspec/protocol/registry";
import type { Capability, Level } from "./results.js";

export { CAPABILITIES } from "./results.js";

const here = dirname(fileURLToPath(import.meta.url));
export const CATALOGUE_FILE = join(here, "requirements.json");
const CATALOGUE_SCHEMA_FILE = join(here, "requirements.schema.json");

/** One version of the suite, as the catalogue lists it. */
export interface SuiteVersion {
  readonly version: string;
  /** The day it was released (YYYY-MM-DD). */
  readonly date: string;
  readonly summary: string;
}

/** What one version changed in a requirement. */
export interface RequirementChange {
  readonly version: string;
  readonly level?: { readonly from: Level; readonly to: Level };
  readonly capability?: { readonly from: Capability; readonly to: Capability };
  /** What the check observes since this version that it did not before. */
  readonly check?: string;
}

export interface Requirement {
  readonly id: string;
  /** Its level in the version the requirement list is of. */
  readonly level: Level;
  /** Its capability in the version the requirement list is of. */
  readonly capability: Capability;
  /** The suite version that added it. */
  readonly since: string;
  /** What later versions changed in it, oldest first (every change, whichever version the list is of). */
  readonly changes: readonly RequirementChange[];
  readonly statement: string;
  /** What the suite's check of it observes, and what of the statement it does not. */
  readonly observes: string;
  readonly reference: { readonly file: string; readonly section: string };
  /** The methods and notifications protocol.json links to this requirement. */
  readonly covers: readonly string[];
}

export class CatalogueError extends Error {
  override readonly name = "CatalogueError";
}

export interface ProtocolEntry {
  readonly name: string;
  readonly requirements: readonly string[];
}

/** Every method and notification of the protocol with the requirement ids protocol.json links to it. */
export function protocolEntries(): ProtocolEntry[] {
  return [...Object.values(methods), ...Object.values(notifications)];
}

/** The whole catalogue: the suite's versions, oldest first, and every requirement as of the current one. */
export interface Suite {
  readonly versions: readonly SuiteVersion[];
  /** The current version: the last one listed. */
  readonly current: string;
  readonly requirements: readonly Requirement[];
}

/** Loads and checks the catalogue; a mistake names the file and the JSON pointer. */
export function loadSuite(file = CATALOGUE_FILE, entries: readonly ProtocolEntry[] = protocolEntries()): Suite {
  const raw: unknown = JSON.parse(readFileSync(file, "utf8"));
  const validate = new Ajv2020({ allErrors: true, strict: true }).compile(
    JSON.parse(readFileSync(CATALOGUE_SCHEMA_FILE, "utf8")) as object,
  );
  if (!validate(raw)) {
    const lines = (validate.errors ?? []).map((e) => `  ${file}#${e.instancePath}: ${e.message ?? e.keyword}`);
    throw new CatalogueError(`the requirement catalogue is invalid:\n${lines.join("\n")}`);
  }
  const { versions, requirements } = raw as {
    versions: SuiteVersion[];
    requirements: (Omit<Requirement, "covers" | "changes"> & { changes?: RequirementChange[] })[];
  };
  const seen = new Set<string>();
  for (const [i, r] of requirements.entries()) {
    if (seen.has(r.id)) throw new CatalogueError(`${file}#/requirements/${i}/id: "${r.id}" is declared twice`);
    seen.add(r.id);
  }
  const covers = new Map<string, string[]>();
  for (const entry of entries) {
    for (const id of entry.requirements ?? []) covers.set(id, [...(covers.get(id) ?? []), entry.name]);
  }
  const list = requirements.map((r): Requirement => ({ ...r, changes: r.changes ?? [], covers: covers.get(r.id) ?? [] }));
  checkHistory(file, versions, list);
  return { versions, current: versions.at(-1)!.version, requirements: list };
}

/** Loads and checks the catalogue: every requirement as of the current version. */
export function loadCatalogue(file = CATALOGUE_FILE, entries: readonly ProtocolEntry[] = protocolEntries()): Requirement[] {
  return [...loadSuite(file, entries).requirements];
}

/** Orders two versions (major.minor): negative, zero or positive. */
export function compareVersions(a: string, b: string): number {
  const [am = 0, an = 0] = a.split(".").map(Number);
  const [bm = 0, bn = 0] = b.split(".").map(Number);
  return am - bm || an - bn;
}

/** The version of a requirement's state from `version` on: its level and capability then. */
function stateAt(r: Requirement, version: string): { level: Level; capability: Capability } {
  // The state before the first change is what that change changed from; each change applies from its version on.
  let level = r.changes.find((c) => c.level)?.level?.from ?? r.level;
  let capability = r.changes.find((c) => c.capability)?.capability?.from ?? r.capability;
  for (const change of r.changes) {
    if (compareVersions(change.version, version) > 0) break;
    if (change.level) level = change.level.to;
    if (change.capability) capability = change.capability.to;
  }
  return { level, capability };
}

/**
 * The requirements of one suite version, with the level and capability each had then; an
 * unknown version is a CatalogueError naming the versions there are.
 */
export function requirementsAt(suite: Suite, version: string): Requirement[] {
  if (!suite.versions.some((v) => v.version === version)) {
    throw new CatalogueError(`unknown suite version ${version}; the versions are ${suite.versions.map((v) => v.version).join(", ")}`);
  }
  return suite.requirements.filter((r) => compareVersions(r.since, version) <= 0).map((r) => ({ ...r, ...stateAt(r, version) }));
}

/** One change between two suite versions, for `turnspec certify --changes`. */
export interface SuiteChange {
  readonly version: string;
  readonly id: string;
  readonly kind: "added" | "level" | "capability" | "check";
  /** What it became or what it now observes, in words. */
  readonly text: string;
  /** It may fail a gateway or client certified under the version before it. */
  readonly breaking: boolean;
}

/**
 * Everything that changed after `from` up to `to` (the current version by default), version
 * by version, from the catalogue: requirements added, levels and capabilities changed, and
 * checks that observe more.
 */
export function suiteChanges(suite: Suite, from: string, to: string = suite.current): { versions: SuiteVersion[]; changes: SuiteChange[] } {
  for (const v of [from, to]) requirementsAt(suite, v);
  if (compareVersions(from, to) > 0) throw new CatalogueError(`suite version ${from} is later than ${to}: name the earlier version first`);
  const versions = suite.versions.filter((v) => compareVersions(v.version, from) > 0 && compareVersions(v.version, to) <= 0);
  const changes: SuiteChange[] = [];
  for (const { version } of versions) {
    const before = new Map(requirementsAt(suite, previousVersion(suite, version)).map((r) => [r.id, r]));
    for (const r of requirementsAt(suite, version)) {
      const earlier = before.get(r.id);
      const existed = (capability: Capability) => [...before.values()].some((b) => b.capability === capability);
      if (!earlier) {
        changes.push({
          version,
          id: r.id,
          kind: "added",
          text: `${r.level} of ${r.capability}: ${r.statement}`,
          breaking: r.level === "MUST" && existed(r.capability),
        });
        continue;
      }
      for (const change of r.changes.filter((c) => c.version === version)) {
        if (change.level)
          changes.push({
            version,
            id: r.id,
            kind: "level",
            text: `${change.level.from} → ${change.level.to} (${r.capability})`,
            breaking: change.level.to === "MUST",
          });
        if (change.capability) {
          changes.push({
            version,
            id: r.id,
            kind: "capability",
            text: `${change.capability.from} → ${change.capability.to} (${r.level})`,
            breaking: r.level === "MUST" && existed(change.capability.to),
          });
        }
        if (change.check) changes.push({ version, id: r.id, kind: "check", text: change.check, breaking: r.level === "MUST" });
      }
    }
  }
  return { versions, changes };
}

/** The version listed just before `version` (itself for the first). */
function previousVersion(suite: Suite, version: string): string {
  const i = suite.versions.findIndex((v) => v.version === version);
  return suite.versions[Math.max(0, i - 1)]!.version;
}

/**
 * The history must hold together: versions in order and numbered by what they change (a
 * new major version exactly when something may fail what the previous one certified), every
 * `since` and change naming a listed version after the requirement's own, and each
 * requirement's changes chaining from one value to the next and ending at its current one.
 */
function checkHistory(file: string, versions: readonly SuiteVersion[], requirements: readonly Requirement[]): void {
  const known = new Set(versions.map((v) => v.version));
  for (const [i, v] of versions.entries()) {
    if (i > 0 && compareVersions(versions[i - 1]!.version, v.version) >= 0)
      throw new CatalogueError(`${file}#/versions/${i}/version: ${v.version} does not come after ${versions[i - 1]!.version}`);
  }
  for (const [i, r] of requirements.entries()) {
    const at = `${file}#/requirements/${i}`;
    if (!known.has(r.since))
      throw new CatalogueError(`${at}/since: ${r.id} names suite version ${r.since}, which the catalogue does not list`);
    let level = r.changes.find((c) => c.level)?.level?.from ?? r.level;
    let capability = r.changes.find((c) => c.capability)?.capability?.from ?? r.capability;
    let last = r.since;
    for (const [j, change] of r.changes.entries()) {
      const where = `${at}/changes/${j}`;
      if (!known.has(change.version))
        throw new CatalogueError(`${where}/version: ${r.id} names suite version ${change.version}, which the catalogue does not list`);
      if (compareVersions(change.version, last) <= 0)
        throw new CatalogueError(`${where}/version: a change of ${r.id} in ${change.version} must come after ${last}`);
      if (change.level && change.level.from !== level)
        throw new CatalogueError(`${where}/level/from: ${r.id} was ${level} before ${change.version}, not ${change.level.from}`);
      if (change.capability && change.capability.from !== capability)
        throw new CatalogueError(
          `${where}/capability/from: ${r.id} was in ${capability} before ${change.version}, not ${change.capability.from}`,
        );
      if (change.level?.from === change.level?.to && change.level)
        throw new CatalogueError(`${where}/level: ${r.id} changes from ${change.level.from} to the same level`);
      if (change.capability?.from === change.capability?.to && change.capability)
        throw new CatalogueError(`${where}/capability: ${r.id} changes from ${change.capability.from} to the same capability`);
      level = change.level?.to ?? level;
      capability = change.capability?.to ?? capability;
      last = change.version;
    }
    if (level !== r.level) throw new CatalogueError(`${at}/level: ${r.id} is ${r.level}, but its last level change leaves it ${level}`);
    if (capability !== r.capability)
      throw new CatalogueError(
        `${at}/capability: ${r.id} is in ${r.capability}, but its last capability change leaves it in ${capability}`,
      );
  }
  const suite: Suite = { versions, current: versions.at(-1)!.version, requirements };
  for (const [i, v] of versions.entries()) {
    if (i === 0) continue;
    const breaking = suiteChanges(suite, versions[i - 1]!.version, v.version).changes.filter((c) => c.breaking);
    const [pm = 0, pn = 0] = versions[i - 1]!.version.split(".").map(Number);
    const want = breaking.length ? `${pm + 1}.0` : `${pm}.${pn + 1}`;
    if (v.version !== want) {
      const why = breaking.length
        ? `it may fail what ${versions[i - 1]!.version} certified (${breaking.map((c) => `${c.id}: ${c.kind}`).join(", ")})`
        : `nothing in it may fail what ${versions[i - 1]!.version} certified`;
      throw new CatalogueError(`${file}#/versions/${i}/version: ${v.version} should be ${want}: ${why}`);
    }
  }
}

/** Turns an id pattern (`PERM-*`, `TURN-?ANCEL`) into a whole-id matcher. */
export function idPattern(pattern: string): RegExp {
  const body = pattern
    .replace(/[.+^${}()|[\]\\]/g, "\\$&")
    .replace(/\*/g, ".*")
    .replace(/\?/g, ".");
  return new RegExp(`^${body}$`, "i");
}

/** The ids among `known` that `patterns` select, and the patterns that select none. */
export function selectIds(patterns: readonly string[], known: readonly string[]): { ids: Set<string>; unmatched: string[] } {
  const ids = new Set<string>();
  const unmatched: string[] = [];
  for (const pattern of patterns) {
    const re = idPattern(pattern);
    const hits = known.filter((id) => re.test(id));
    if (hits.length === 0) unmatched.push(pattern);
    for (const id of hits) ids.add(id);
  }
  return { ids, unmatched };
}

/**
 * The requirement catalogue: `conformance/requirements.json`, checked against its schema,
 * joined with the methods and notifications protocol.json links to each id (as the
 * generated registry carries them).
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

export interface Requirement {
  readonly id: string;
  readonly level: Level;
  readonly capability: Capability;
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

/** Loads and checks the catalogue; a mistake names the file and the JSON pointer. */
export function loadCatalogue(file = CATALOGUE_FILE, entries: readonly ProtocolEntry[] = protocolEntries()): Requirement[] {
  const raw: unknown = JSON.parse(readFileSync(file, "utf8"));
  const validate = new Ajv2020({ allErrors: true, strict: true }).compile(JSON.parse(readFileSync(CATALOGUE_SCHEMA_FILE, "utf8")) as object);
  if (!validate(raw)) {
    const lines = (validate.errors ?? []).map((e) => `  ${file}#${e.instancePath}: ${e.message ?? e.keyword}`);
    throw new CatalogueError(`the requirement catalogue is invalid:\n${lines.join("\n")}`);
  }
  const requirements = (raw as { requirements: Omit<Requirement, "covers">[] }).requirements;
  const seen = new Set<string>();
  for (const [i, r] of requirements.entries()) {
    if (seen.has(r.id)) throw new CatalogueError(`${file}#/requirements/${i}/id: "${r.id}" is declared twice`);
    seen.add(r.id);
  }
  const covers = new Map<string, string[]>();
  for (const entry of entries) {
    for (const id of entry.requirements ?? []) covers.set(id, [...(covers.get(id) ?? []), entry.name]);
  }
  return requirements.map((r) => ({ ...r, covers: covers.get(r.id) ?? [] }));
}

/** Turns an id pattern (`PERM-*`, `TURN-?ANCEL`) into a whole-id matcher. */
export function idPattern(pattern: string): RegExp {
  const body = pattern.replace(/[.+^${}()|[\]\\]/g, "\\$&").replace(/\*/g, ".*").replace(/\?/g, ".");
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

/**
 * What a message carries as params, before any schema is consulted: whether it may leave
 * them out, whether it takes none at all, and how they are structured (by name: a JSON
 * object; by position: a JSON array; either). A dispatcher, a client and a checker of
 * recorded messages read a frame's params through `readParams`, which turns the positional
 * form of an "either" message into the named form its schema describes.
 */
import type { ValidationIssue } from "./validation.js";

/** Who sends a message: the client, the server, or either side. */
export type MessageDirection = "client_to_server" | "server_to_client" | "both";

/** How params are sent: a JSON object, a JSON array, or either (an array gives the named params in order). */
export type ParamStructure = "by-name" | "by-position" | "either";

/** What the registry says about one message's params. */
export interface ParamsEntry {
  /** The params' type; absent when the message takes no params. */
  readonly params?: string;
  /** The frame may leave params out. */
  readonly paramsOptional?: boolean;
  /** Default by-name. */
  readonly paramStructure?: ParamStructure;
  /** For "either": the names of the params, in the order of their positions; absent when the params are not an object of named params, and are taken as they are. */
  readonly paramNames?: readonly string[];
}

export type ReadParams = { readonly ok: true; readonly value: unknown } | { readonly ok: false; readonly issues: ValidationIssue[] };

const issue = (message: string, received?: unknown): ReadParams => ({
  ok: false,
  issues: [{ pointer: "", message, ...(received === undefined ? {} : { received }) }],
});

/**
 * The params as their schema reads them: undefined when the frame leaves them out (and may),
 * the named form of positional params of an "either" message, or the issues with their
 * presence or structure.
 */
export function readParams(entry: ParamsEntry, raw: unknown): ReadParams {
  if (entry.params === undefined)
    return raw === undefined ? { ok: true, value: undefined } : issue("must be left out: the message takes no params", raw);
  if (raw === undefined)
    return entry.paramsOptional ? { ok: true, value: undefined } : issue("are required: the message may not leave its params out");
  const structure = entry.paramStructure ?? "by-name";
  const isArray = Array.isArray(raw);
  const isObject = raw !== null && typeof raw === "object" && !isArray;
  if (structure === "by-name" && !isObject) return issue(`must be a JSON object (params by name)${isArray ? ", not an array" : ""}`, raw);
  if (structure === "by-position" && !isArray) return issue("must be a JSON array (params by position)", raw);
  if (structure === "either") {
    if (isObject) return { ok: true, value: raw };
    if (!isArray) return issue("must be a JSON object (by name) or a JSON array (by position)", raw);
    if (entry.paramNames === undefined) return { ok: true, value: raw };
    const names = entry.paramNames;
    const list = raw as unknown[];
    if (list.length > names.length)
      return issue(`has ${list.length} positions; the message takes at most ${names.length} (${names.join(", ")})`, raw);
    const named: Record<string, unknown> = {};
    list.forEach((value, i) => (named[names[i]!] = value));
    return { ok: true, value: named };
  }
  return { ok: true, value: raw };
}

/**
 * The positional form of named params for an "either" message: the values in the order of
 * `names`, trailing absent ones left out. An absent param before a given one has no
 * positional form (a null in its place would be a value), so it throws.
 */
export function positionalParams(names: readonly string[], named: Record<string, unknown>): unknown[] {
  const list = names.map((name) => named[name]);
  while (list.length && list[list.length - 1] === undefined) list.pop();
  const gap = list.indexOf(undefined);
  if (gap !== -1) throw new Error(`param "${names[gap]}" is left out but a later one is given; by position it cannot be skipped`);
  return list;
}

/** The params as a frame carries them: an "either" message's named params by position, anything else as it is. */
export function wireParams(entry: ParamsEntry | undefined, params: unknown): unknown {
  if (
    entry?.paramStructure !== "either" ||
    entry.paramNames === undefined ||
    params === null ||
    typeof params !== "object" ||
    Array.isArray(params)
  )
    return params;
  return positionalParams(entry.paramNames ?? [], params as Record<string, unknown>);
}

/** Whether a message of `direction` is sent by `side`. */
export function sentBy(direction: MessageDirection, side: "client" | "server"): boolean {
  return direction === "both" || direction === (side === "client" ? "client_to_server" : "server_to_client");
}

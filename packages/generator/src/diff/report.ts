/**
 * The typed report `diffSchemas` returns; `report.schema.json` beside it describes the
 * same shape as JSON (`turnspec diff --json`).
 */
import type { Direction, Json } from "../model.js";
import type { ValidationMode } from "../emit/validators.js";

/** What a change is judged as: breaking, not decidable by the tool (with its reason), or compatible. */
export type Verdict = "breaking" | "undetermined" | "compatible";

/** Wire compatibility (deployed peers) or generated-code compatibility (code compiled against the old output). */
export type Category = "wire" | "code";

/**
 * Which deployment a message change is judged for: a sender of the old schemas talking to a
 * receiver of the new ones, or the reverse.
 */
export type Flow = "old_to_new" | "new_to_old";

/** Which peer a side is; "peer" for a message either side sends. */
export type Role = "client" | "server" | "peer";

/** A place in one version of the schemas: a file of the schemas folder and a JSON pointer into it. */
export interface Location {
  readonly file: string;
  readonly pointer: string;
}

/** A JSON value the sender's schema allows and the receiver's validator rejects, both checked by the compiled validators. */
export interface Counterexample {
  /** The message the value is (a change reaching several messages shows one of them). */
  readonly message?: string;
  readonly value: Json;
  /** Why the receiver's validator rejects it: the instance path and the failed keyword. */
  readonly rejection: string;
}

export interface Change {
  readonly category: Category;
  /** The stable id of the rule the change is judged by (FIELD_REQUIRED_ADDED, ENUM_VALUE_REMOVED, DIRECTION_CHANGED, …; rules.ts lists them). */
  readonly rule: string;
  /**
   * The group the change is listed under: for a message change, the type where the schema
   * changed (its title); otherwise a method or notification name, `errors`, `ordering`, or
   * a type title (code).
   */
  readonly subject: string;
  readonly verdict: Verdict;
  /** What changed, in old → new terms whichever side breaks (`enum value "Paused" added`, `maximum 9 → 19`). */
  readonly change: string;
  /** Who breaks and why (for a compatible change, why it is compatible): the only place that names the direction. */
  readonly why: string;
  /** For a message change: every message (`turn/start params`) whose values the change reaches, in this flow. */
  readonly messages?: readonly string[];
  /** Where the change is in the old and the new schemas (null where that side has no such place). */
  readonly old: Location | null;
  readonly new: Location | null;
  /** For a message change: which deployment it breaks, and the roles of its two sides. */
  readonly flow?: Flow;
  readonly sender?: { readonly version: "old" | "new"; readonly role: Role };
  readonly receiver?: { readonly version: "old" | "new"; readonly role: Role };
  /** For a breaking message change: the value that shows it. */
  readonly counterexample?: Counterexample;
  /** For a breaking registry change: the JSON-RPC frame that shows it. */
  readonly frame?: Json;
  /** Set when the team accepted the change for this release (turnspec.config.json's diff.accept): it no longer fails the run. */
  readonly accepted?: { readonly version: string; readonly reason: string };
}

/** A change a team accepts for one release: its rule, optionally the subject (a type, method or message) it is about, the new version it holds for, and why. */
export interface Acceptance {
  readonly rule: string;
  readonly subject?: string;
  readonly version: string;
  readonly reason: string;
}

export interface DiffReport {
  /** The receivers' validation mode the wire changes were judged in. */
  readonly mode: ValidationMode;
  readonly categories: readonly Category[];
  readonly old: { readonly title: string; readonly version: string };
  readonly new: { readonly title: string; readonly version: string };
  readonly changes: readonly Change[];
  /** Counts of the changes by verdict, those accepted for this release counted apart (not in breaking or undetermined). */
  readonly summary: { readonly breaking: number; readonly undetermined: number; readonly compatible: number; readonly accepted: number };
  /** Acceptances in the config for another version than the new side's: they no longer apply. */
  readonly staleAcceptances?: readonly Acceptance[];
}

export interface DiffOptions {
  /** The receivers' validation mode; default strict. */
  readonly mode?: ValidationMode;
  /** The categories to judge; default wire only. */
  readonly categories?: readonly Category[];
  /** Changes the team accepts (turnspec.config.json's diff.accept). */
  readonly accepted?: readonly Acceptance[];
}

export const ROLE_OF_SENDER: Record<Direction, Role> = { client_to_server: "client", server_to_client: "server", both: "peer" };
export const otherRole = (role: Role): Role => (role === "client" ? "server" : role === "server" ? "client" : "peer");

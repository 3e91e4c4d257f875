/**
 * The vectors' format: what `turnspec vectors` writes and every language's harness reads
 * (docs/languages.md, "The vectors").
 */

/** What the TypeScript validators answer for one value in one mode. */
export interface Verdict {
  readonly valid: boolean;
  /** The JSON pointers of the issues, sorted by UTF-16 code units, each once. */
  readonly pointers: readonly string[];
}

/** One value checked as one named type, in both modes. */
export interface TypeCase {
  /** Unique within the file, e.g. `TurnStartParams/maxLength/thread_id`. */
  readonly id: string;
  /** `type`: built from the type's schema; `hazard`: a value where languages are known to differ. */
  readonly group: "type" | "hazard";
  readonly type: string;
  /** The JSON text, exactly as a decoder must read it (raw where parsing matters). */
  readonly json: string;
  readonly strict: Verdict;
  readonly tolerant: Verdict;
  /**
   * The canonical JSON text of the value the text denotes: what `encode` gives, and a round trip
   * in a mode where the value is valid. Null when the text holds a number no double holds (1e400).
   */
  readonly canonical: string | null;
  /** What the case tries, in a few words. */
  readonly note: string;
}

/** One finding on a sequence of JSON-RPC messages. */
export interface MessageFinding {
  /** The message, by index in `frames`. */
  readonly frame: number;
  /** A pointer into the message: `/params/…`, `/result/…`, `/error/…` or one on the envelope. */
  readonly pointer: string;
}

/** JSON-RPC messages checked in order (a response after its request), ordering rules off. */
export interface MessageCase {
  readonly id: string;
  readonly frames: readonly string[];
  readonly strict: readonly MessageFinding[];
  readonly tolerant: readonly MessageFinding[];
  readonly note: string;
}

/** Frames as one end sees them, checked against the protocol's ordering rules. */
export interface Transcript {
  readonly id: string;
  /** The rule the transcript was built to try. */
  readonly rule: string;
  readonly frames: readonly { readonly from: "client_to_server" | "server_to_client"; readonly json: string }[];
  /** The violations, by frame index; `frame` is null for those reported at the end of the stream. */
  readonly violations: readonly { readonly frame: number | null; readonly rule: string }[];
  readonly note: string;
}

/** The whole set for one schemas folder. */
export interface Vectors {
  readonly format: "turnspec-vectors/1";
  readonly protocol: { readonly title: string; readonly version: string; readonly digest: string };
  /** The contract the verdicts were taken under. */
  readonly contract: {
    /** Integers outside this range are refused by every validator: the range every language carries exactly. */
    readonly integers: { readonly minimum: number; readonly maximum: number };
    readonly lengths: "code points";
    readonly patterns: "ECMA-262 with the u flag";
    readonly canonical: "RFC 8785, lone surrogates escaped";
  };
  readonly types: readonly TypeCase[];
  readonly messages: readonly MessageCase[];
  readonly transcripts: readonly Transcript[];
  /** Hazards of the fixed list that found no place in this protocol's schemas. */
  readonly hazardsWithoutPlace: readonly string[];
}

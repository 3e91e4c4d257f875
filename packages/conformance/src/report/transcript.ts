/**
 * A scenario's JSON-RPC transcript as people read it: one block per frame, marked sent
 * (→, from the suite) or received (←, from the gateway), with its time since the run
 * started and the frame pretty-printed. Shared by the JUnit and HTML reports.
 */
import type { TranscriptEntry } from "../results.js";

export interface TranscriptBlock {
  readonly direction: TranscriptEntry["direction"];
  /** "→ sent" or "← received"; "← model call" and "→ model answer" for the scripted model's HTTP exchanges. */
  readonly label: string;
  /** "+12 ms". */
  readonly at: string;
  readonly json: string;
  /** The frame is the one that failed strict validation. */
  readonly invalid: boolean;
}

/** How each kind of transcript entry is labelled, by peer and direction. */
const LABELS: Record<NonNullable<TranscriptEntry["peer"]> | "rpc", Record<TranscriptEntry["direction"], string>> = {
  rpc: { sent: "→ sent", received: "← received" },
  model: { sent: "→ model answer", received: "← model call" },
  client: { sent: "→ command to the client", received: "← the client's answer" },
};

export function prettyJson(value: unknown): string {
  return JSON.stringify(value, null, 2) ?? String(value);
}

export function transcriptBlocks(entries: readonly TranscriptEntry[], invalidFrame?: unknown): TranscriptBlock[] {
  const invalidJson = invalidFrame === undefined ? undefined : JSON.stringify(invalidFrame);
  return entries.map((entry) => ({
    direction: entry.direction,
    label: LABELS[entry.peer ?? "rpc"][entry.direction],
    at: `+${Math.round(entry.atMs)} ms`,
    json: prettyJson(entry.frame),
    invalid: invalidJson !== undefined && JSON.stringify(entry.frame) === invalidJson,
  }));
}

/** The transcript as plain text. */
export function transcriptText(entries: readonly TranscriptEntry[], invalidFrame?: unknown): string {
  return transcriptBlocks(entries, invalidFrame)
    .map((b) => `${b.label} ${b.at}${b.invalid ? "  (invalid)" : ""}\n${b.json}`)
    .join("\n");
}

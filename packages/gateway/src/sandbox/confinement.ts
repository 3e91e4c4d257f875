/**
 * What an OS sandbox confines one shell run to, derived from the turn's security snapshot
 * alone: the snapshot is the record of what the turn enforces, so the sandbox reads it
 * rather than a second copy of the mode mapping.
 */
import type { TurnExecutionSecuritySnapshot } from "@turnspec/protocol/types";

export interface Confinement {
  /** The OS sandbox mechanism (the snapshot's backend.sandbox_backend). */
  readonly backend: string;
  /** Paths bound writable: read_write roots and the turn's temp folder. */
  readonly writable: readonly string[];
  /** Paths bound read-only on top of a writable parent (a read_only root inside a writable one). */
  readonly readOnly: readonly string[];
  /** The turn's private temp folder (TMPDIR inside the sandbox), if it has one. */
  readonly tempDir?: string;
  /**
   * host: the host's network; none: a network namespace of its own with nothing but
   * loopback; proxy: the same, with the turn's filtering proxy as the only way out
   * (the snapshot's network mode `restricted`).
   */
  readonly network: "host" | "none" | "proxy";
}

/** The confinement of a turn's shell runs, or undefined when the snapshot names no OS sandbox. */
export function confinementOf(
  snapshot: Pick<TurnExecutionSecuritySnapshot, "sandbox" | "backend" | "network"> | undefined,
): Confinement | undefined {
  const backend = snapshot?.backend.sandbox_backend;
  if (!snapshot || !backend || snapshot.sandbox.filesystem.unrestricted) return undefined;
  const entries = snapshot.sandbox.filesystem.entries;
  const temp = entries.find((e) => e.kind === "temp");
  return {
    backend,
    writable: entries.filter((e) => e.access === "read_write").map((e) => e.path),
    readOnly: entries.filter((e) => e.access === "read_only").map((e) => e.path),
    ...(temp ? { tempDir: temp.path } : {}),
    network: snapshot.network.mode === "restricted" ? "proxy" : snapshot.sandbox.network_enabled ? "host" : "none",
  };
}

/**
 * A turn's roots: where its tools may act without asking. A client's turn has its thread's
 * folder; a child turn (spawn_agent, with or without a route) never gets more than its
 * parent had, so a destination thread whose folder lies outside the parent's roots (a
 * route to a thread in `/`) does not widen what the child may touch: its roots are then
 * the parent's, and its own folder is outside them, so everything there is asked about.
 */
import type { TurnExecutionSecuritySnapshot } from "@turnspec/protocol/types";
import { isWithin, resolveRealPath } from "./paths.js";

/** The roots recorded in a snapshot (workspace, project and allowed paths, and the turn's temp folder). */
export function rootsOf(snapshot: Pick<TurnExecutionSecuritySnapshot, "sandbox">): string[] {
  return snapshot.sandbox.filesystem.entries.map((e) => e.path);
}

/**
 * The roots of a turn in a thread whose folder is `cwd`: [cwd] for a client's turn or
 * under an unrestricted parent; under a restricted parent, [cwd] when it lies within one
 * of the parent's workspace or project roots, else those roots themselves.
 */
export function childRoots(cwd: string, parent: Pick<TurnExecutionSecuritySnapshot, "sandbox"> | undefined): string[] {
  if (!parent || parent.sandbox.filesystem.unrestricted) return [cwd];
  const parentRoots = parent.sandbox.filesystem.entries.filter((e) => e.kind === "workspace" || e.kind === "project").map((e) => e.path);
  const real = resolveRealPath(cwd);
  if (parentRoots.some((root) => isWithin(real, root))) return [cwd];
  return parentRoots.length > 0 ? parentRoots : [cwd];
}

/**
 * The per-turn temp folder: the one place a read_only turn's commands may write. Made
 * when the turn starts (the security snapshot lists it as a `temp` entry), removed when
 * the turn ends.
 */
import { mkdirSync, mkdtempSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** Creates a fresh private temp folder for `turnId` and returns its real path. */
export function createTurnTempDir(turnId: string): string {
  // The id is the client's; only a safe prefix of it goes into the name.
  const tag = turnId.replace(/[^A-Za-z0-9_-]/g, "_").slice(0, 40);
  return realpathSync(mkdtempSync(join(tmpdir(), `turnspec-turn-${tag}-`)));
}

/** Makes sure the folder exists (a turn resumed after a restart may have lost it). */
export function ensureTurnTempDir(path: string): void {
  mkdirSync(path, { recursive: true, mode: 0o700 });
}

/** Removes the folder and all that the turn's commands left in it. */
export function removeTurnTempDir(path: string): void {
  rmSync(path, { recursive: true, force: true });
}

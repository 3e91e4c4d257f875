/** `turnspec serve` processes on a PostgreSQL database, and WebSocket clients of them, for the several-instance tests. */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { AnyNotification } from "../../generated/registry.js";
import { connectWebSocket } from "../../packages/rpc/src/transport/websocket.js";
import { startStrictClient, type StrictClient } from "../../bench/strict-client.js";

export interface Instance {
  readonly url: string;
  readonly child: ChildProcess;
  stderr(): string;
}

/**
 * Starts `turnspec serve --port 0` on the database with `config` as its configuration file
 * and resolves once it listens; `cleanups` gets what stops it. No token secret is
 * configured unless `config` has one: the instances sign with the one kept in the database.
 */
export async function startInstance(
  store: string,
  config: Record<string, unknown>,
  cleanups: (() => Promise<unknown> | unknown)[],
): Promise<Instance> {
  const dir = mkdtempSync(join(tmpdir(), "turnspec-cluster-"));
  const file = join(dir, "gateway.json");
  writeFileSync(file, JSON.stringify(config));
  const child = spawn("node", ["bin/turnspec.js", "serve", "--port", "0", "--no-auth", "--store", store, "--config", file], {
    stdio: ["ignore", "ignore", "pipe"],
  });
  cleanups.push(
    () =>
      new Promise((resolve) =>
        child.exitCode !== null || child.signalCode !== null ? resolve(undefined) : (child.once("exit", resolve), child.kill("SIGTERM")),
      ),
  );
  let stderr = "";
  const url = await new Promise<string>((resolve, reject) => {
    child.stderr!.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
      const match = /listening on (ws:\/\/\S+)/.exec(stderr);
      if (match) resolve(match[1]!);
    });
    child.once("exit", (code) => reject(new Error(`serve exited with ${code} before listening: ${stderr}`)));
  });
  return { url, child, stderr: () => stderr };
}

export async function connectClient(gateway: Instance, cleanups: (() => Promise<unknown> | unknown)[]): Promise<StrictClient> {
  const client = await startStrictClient(await connectWebSocket(gateway.url));
  cleanups.push(() => client.client.close());
  return client;
}

/** The notifications of a turn that carry a log sequence, as a client received them. */
export function sequenced(
  received: readonly AnyNotification[],
  turnId: string,
): { sequence: number; method: string; params: Record<string, unknown> }[] {
  return received
    .filter((n) => "turn_id" in n.params && n.params.turn_id === turnId && "sequence" in n.params)
    .map((n) => ({
      sequence: (n.params as { sequence: number }).sequence,
      method: n.method,
      params: n.params as unknown as Record<string, unknown>,
    }));
}

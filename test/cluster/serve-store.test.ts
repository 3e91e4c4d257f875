/**
 * `turnspec serve --store`: a postgres:// URL, from the command line or the config file,
 * runs the gateway on PostgreSQL; two event logs at once are refused as a usage error; an
 * unreachable database is refused with exit code 2 and a message that masks the password.
 */
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { spawnStdioTransport } from "../../packages/rpc/src/transport/child-process.js";
import { startStrictClient } from "../../bench/strict-client.js";
import { script, text } from "../gateway/harness.js";
import { startPostgres, type PostgresServer } from "../../bench/postgres-server.js";

const started = await startPostgres();
if ("skip" in started) console.warn(`skipping the serve --store postgres tests: ${started.skip}`);
const server: PostgresServer | undefined = "server" in started ? started.server : undefined;
afterAll(() => server?.stop());

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

describe("turnspec serve --store", () => {
  it("refuses two event logs at once as a usage error", () => {
    const run = spawnSync(
      "node",
      ["bin/turnspec.js", "serve", "--stdio", "--store", "postgres://x@127.0.0.1:1/db", "--db", "events.sqlite"],
      { encoding: "utf8" },
    );
    expect(run.status).toBe(2);
    expect(run.stderr).toContain("Choose one event log: --store, --db or --memory.");
  });

  describe.skipIf(server === undefined)("on PostgreSQL", () => {
    it("runs a turn on the database named by the config file, and a restart reads it back", async () => {
      const store = await server!.createDatabase();
      const config = join(mkdtempSync(join(tmpdir(), "turnspec-serve-store-")), "gateway.json");
      writeFileSync(config, JSON.stringify({ store }));
      const first = spawnStdioTransport("node", ["bin/turnspec.js", "serve", "--stdio", "--config", config], { stderr: "collect" });
      cleanups.push(() => first.close());
      const a = await startStrictClient(first);
      const { thread } = await a.client.threadStart({});
      const done = a.waitFor((n) => n.method === "turn/completed");
      await a.client.turnStart({ thread_id: thread.id, turn_id: "trn_pg", input: text(script({ say: "stored in postgres", chunks: 3 })) });
      await done;
      const items = await a.client.turnItems({ thread_id: thread.id, turn_id: "trn_pg" });
      await a.client.close();

      const second = spawnStdioTransport("node", ["bin/turnspec.js", "serve", "--stdio", "--store", store], { stderr: "collect" });
      cleanups.push(() => second.close());
      const b = await startStrictClient(second);
      expect(await b.client.turnItems({ thread_id: thread.id, turn_id: "trn_pg" })).toEqual(items);
      expect(items.events.at(-1)?.method).toBe("turn/completed");
      expect(a.protocolErrors).toEqual([]);
    });

    it("refuses an unreachable database with exit code 2, its password masked", async () => {
      const url = `postgres://turnspec:hunter2@127.0.0.1:${server!.port}/missing_database`;
      const child = spawn("node", ["bin/turnspec.js", "serve", "--stdio", "--store", url], { stdio: ["pipe", "ignore", "pipe"] });
      let stderr = "";
      child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
      const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
      expect(code).toBe(2);
      expect(stderr).toContain("turnspec serve: cannot open event store postgres://turnspec:***@127.0.0.1:");
      expect(stderr).toContain('database "missing_database" does not exist');
      expect(stderr).not.toContain("hunter2");
    });
  });
});

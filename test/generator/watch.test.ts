/**
 * `turnspec generate --watch`: generates, then again after each change to a schema file; a
 * mistake is reported and the watch goes on (the output is left as it was); SIGINT ends it
 * with exit 0. Spawns the real command.
 */
import { spawn } from "node:child_process";
import { cpSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { useTempDirs } from "./temp-dirs.js";

const root = fileURLToPath(new URL("../..", import.meta.url));
const tempDir = useTempDirs();

describe("turnspec generate --watch", () => {
  it("regenerates on change, survives a mistake, and stops on SIGINT", async () => {
    const schemas = tempDir("turnspec-watch-");
    cpSync(join(root, "test/fixtures/mini-protocol/schemas"), schemas, { recursive: true });
    const out = join(tempDir("turnspec-watch-out-"), "gen");
    const child = spawn(process.execPath, [join(root, "bin/turnspec.js"), "generate", "--watch", "--schemas", schemas, "--out", out], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (c) => (stdout += c));
    child.stderr.on("data", (c) => (stderr += c));
    const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
    /** Waits until `stdout`/`stderr` shows `pattern` `count` times. */
    const until = async (read: () => string, pattern: RegExp, count: number) => {
      while ((read().match(new RegExp(pattern.source, "g")) ?? []).length < count) {
        if (child.exitCode !== null) throw new Error(`the watch ended early:\n${stdout}\n${stderr}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    };
    try {
      await until(() => stdout, /watching /, 1);
      expect(stdout).toContain("types.ts");

      const file = join(schemas, "kv_get_params.json");
      const schema = JSON.parse(readFileSync(file, "utf8"));
      writeFileSync(file, JSON.stringify({ ...schema, description: "Params of kv/get, edited while watching." }, null, 2));
      await until(() => stdout, /watching /, 2);
      expect(readFileSync(join(out, "types.ts"), "utf8")).toContain("Params of kv/get, edited while watching.");

      writeFileSync(file, "{ broken");
      await until(() => stderr, /have mistakes; nothing was written/, 1);
      expect(stderr).toContain("kv_get_params.json");
      expect(readFileSync(join(out, "types.ts"), "utf8")).toContain("Params of kv/get, edited while watching.");

      writeFileSync(file, JSON.stringify(schema, null, 2));
      await until(() => stdout, /wrote .*types\.ts/, 3);
    } finally {
      child.kill("SIGINT");
    }
    expect(await exited).toBe(0);
  }, 60_000);
});

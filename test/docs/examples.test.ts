/**
 * The examples the guides show (under examples/, embedded by `npm run docs`) do what the guides say. The
 * client SDK examples are run by test/client/examples.test.ts. The two CI workflows are not run as such:
 * the protocol team's runs exactly the commands of examples/generate/check.sh, which is run here, and the
 * vendor's certify command is parsed by `turnspec certify` with this repository's example files.
 */
import { execFile, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { loadCatalogue } from "../../packages/conformance/src/catalogue.js";
import { parseToolMap } from "../../packages/conformance/src/certify-command.js";
import { loadExpectedFailures } from "../../packages/conformance/src/verdict.js";
import { readConfigFile, resolveConfig } from "../../packages/gateway/src/config.js";
import { startHarness, text } from "../gateway/harness.js";

const run = promisify(execFile);

/** Runs a command the way a reader would, from the repository root; never throws on a failing exit status. */
async function sh(command: string, timeout = 120_000): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run("sh", ["-c", command], { timeout, encoding: "utf8" });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === "number" ? e.code : -1, stdout: e.stdout ?? "", stderr: e.stderr ?? "" };
  }
}

/** The command lines of a shell example (comments dropped, `\` continuations joined). */
function commandLines(file: string): string[] {
  return readFileSync(file, "utf8")
    .replace(/\\\n\s*/g, "")
    .split("\n")
    .filter((l) => l.trim() !== "" && !l.startsWith("#"));
}

describe("validating messages (docs/validate.md)", () => {
  it("validate.ts shows strict and tolerant results and a passing value", async () => {
    const { code, stdout } = await sh("npx tsx examples/validate/validate.ts");
    expect(code).toBe(0);
    expect(stdout).toBe(
      [
        'strict /priority: is not a known field; got "high"',
        'strict /permission_profile/mode: must be one of full_access, auto_accept_edits, supervised; got "admin"',
        "tolerant /permission_profile/mode: must be one of full_access, auto_accept_edits, supervised",
        "turn/start params valid: true",
        "a TurnStartParams for thread thr_1",
        "",
      ].join("\n"),
    );
  });

  it("ordering.ts finds the swapped frames, and nothing in the sample session", async () => {
    const swapped = await sh("npx tsx examples/validate/ordering.ts examples/validate/swapped.jsonl");
    expect(swapped.stdout).toMatch(
      /^ITEM-ORDER-STARTED-FIRST \(frame 5\): item\/command_execution\/output_delta for item "itm_1" .* came before its item\/started$/m,
    );
    expect(swapped.stdout).toMatch(/15 frames, 4 violations\n$/);
    expect((await sh("npx tsx examples/validate/ordering.ts examples/session.jsonl")).stdout).toBe("15 frames, 0 violations\n");
  });

  it("the sample files are what the guide says: a valid item, a request invalid in two ways, frames valid one by one", async () => {
    expect((await sh("node bin/turnspec.js validate --type TurnItem examples/validate/item.json")).code).toBe(0);
    expect((await sh("node bin/turnspec.js validate --no-ordering examples/validate/swapped.jsonl")).code).toBe(0);
    const bad = await sh("node bin/turnspec.js validate --json examples/validate/bad-turn-start.jsonl");
    expect(bad.code).toBe(1);
    expect((JSON.parse(bad.stdout) as { findings: { pointer: string }[] }).findings.map((f) => f.pointer)).toEqual([
      "params/priority",
      "params/permission_profile/mode",
    ]);
  });
});

describe("describing a protocol and generating it (docs/protocol.md, docs/generate.md)", () => {
  it("the notes protocol generates every output kind", async () => {
    const out = mkdtempSync(join(tmpdir(), "turnspec-notes-"));
    try {
      const result = await sh(`node bin/turnspec.js generate --schemas examples/protocol/schemas --out ${out}`);
      expect(result.stderr).toBe("");
      expect(result.code).toBe(0);
      expect(readdirSync(out)).toEqual(
        expect.arrayContaining([
          "types.ts",
          "validators.ts",
          "registry.ts",
          "client.ts",
          "server.ts",
          "openrpc.json",
          "PROTOCOL.md",
          "ordering.ts",
          "index.ts",
        ]),
      );
      expect(readFileSync(join(out, "registry.ts"), "utf8")).toContain('"notes/add"');
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  });

  it("the broken copy stops with both mistakes and writes nothing", async () => {
    const result = await sh("node bin/turnspec.js generate --schemas examples/protocol/broken --out examples/protocol/generated");
    expect(result.code).toBe(1);
    expect(result.stderr).toContain("at notes_add_params.json#");
    expect(result.stderr).toContain('dangling $ref "notes.json"');
    expect(existsSync("examples/protocol/generated")).toBe(false);
  });

  it("check.sh, what CI runs, passes on this repository", async () => {
    const result = await sh("sh -e examples/generate/check.sh");
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
  });

  it("the CI workflow runs exactly the commands of check.sh", () => {
    const workflow = [...readFileSync("examples/generate/ci.yml", "utf8").matchAll(/^\s+- run: (npx turnspec .+)$/gm)].map((m) => m[1]);
    expect(workflow).toEqual(commandLines("examples/generate/check.sh"));
  });
});

describe("running the reference gateway (docs/gateway.md)", () => {
  it("the configuration file is valid and read as written", () => {
    const config = resolveConfig(readConfigFile("examples/gateway/config.json"));
    expect(config).toMatchObject({
      defaultProvider: "openai",
      openai: { baseURL: "http://127.0.0.1:8080/v1", model: "local-model" },
      questionTimeoutMs: 300_000,
    });
  });

  it.each(commandLines("examples/gateway/serve.sh"))("starts: %s", async (line) => {
    const child = spawn("sh", ["-c", `exec ${line}`], { stdio: ["pipe", "pipe", "pipe"], detached: true });
    try {
      let stdout = "";
      let stderr = "";
      child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
      const ready = new Promise<void>((resolve, reject) => {
        child.stderr.on("data", (d: Buffer) => {
          stderr += d.toString();
          if (/listening on ws:\/\/|serving on stdio/.test(stderr)) resolve();
        });
        child.once("exit", (code) => reject(new Error(`exited with ${code}: ${stderr}`)));
      });
      await ready;
      if (line.includes("--stdio")) {
        child.stdin.write('{"jsonrpc":"2.0","id":1,"method":"thread/start","params":{}}\n');
        await expect.poll(() => stdout, { timeout: 10_000 }).toMatch(/"id":1,"result":\{"thread"/);
      }
    } finally {
      try {
        process.kill(-child.pid!, "SIGTERM");
      } catch (error) {
        // A command that failed to start has exited with its group: its error above is the one to see.
        if ((error as NodeJS.ErrnoException).code !== "ESRCH") throw error;
      }
    }
  });

  it("the script runs as the guide says: a shell call, then a streamed answer", async () => {
    const h = await startHarness();
    try {
      const thread = await h.thread();
      const end = await h.runTurn({
        thread_id: thread,
        turn_id: "trn_script",
        input: text(readFileSync("examples/gateway/script.json", "utf8")),
      });
      expect(end.method).toBe("turn/completed");
      const completed = h.received
        .filter((n) => n.method === "item/completed")
        .map((n) => (n.params as { item: { type: string; command?: string; text?: string } }).item);
      expect(completed.map((i) => i.type)).toEqual(expect.arrayContaining(["commandExecution", "agentMessage"]));
      expect(completed.find((i) => i.type === "commandExecution")?.command).toBe("ls");
      expect(completed.find((i) => i.type === "agentMessage")?.text).toBe("The folder holds two files.");
      expect(h.received.filter((n) => n.method === "item/agent_message/delta")).toHaveLength(3);
    } finally {
      await h.close();
    }
  });
});

describe("certifying a gateway (docs/certify.md)", () => {
  it("certify.sh certifies the reference gateway at Full and writes every report", async () => {
    rmSync(".turnspec/certify", { recursive: true, force: true });
    const result = await sh("sh -e examples/certify/certify.sh");
    expect(result.stdout).toContain("Certified Full (Full requested)");
    expect(result.code).toBe(0);
    for (const f of ["report.json", "report.xml", "report.html", "certificate.json", "badge.json"])
      expect(existsSync(join(".turnspec/certify", f)), f).toBe(true);
    expect(JSON.parse(readFileSync(".turnspec/certify/certificate.json", "utf8"))).toMatchObject({
      certificate: { level: "full", certified: true },
    });
  });

  it("the expected-failures file and the tool map are accepted, naming known requirements and reference tools", () => {
    const known = new Set(loadCatalogue().map((r) => r.id));
    const listed = loadExpectedFailures("examples/certify/expected-failures.json");
    expect(listed.length).toBeGreaterThan(0);
    for (const entry of listed) expect(known.has(entry.id), entry.id).toBe(true);
    expect(parseToolMap("examples/certify/tool-map.json")).toEqual({ shell: "bash", read_file: "fs_read", write_file: "fs_write" });
  });

  it("the vendor workflow's certify command takes only options certify knows", async () => {
    const workflow = readFileSync("examples/certify/ci.yml", "utf8");
    // The folded (>-) run step: its lines joined with spaces.
    const step = /- run: >-\n((?: {10}.+\n)+)/.exec(workflow)?.[1];
    expect(step, "examples/certify/ci.yml has a folded run step").toBeDefined();
    const command = step!
      .split("\n")
      .map((l) => l.trim())
      .join(" ")
      .trim()
      .replace("conformance-tool-map.json", "examples/certify/tool-map.json")
      .replace("conformance-known.json", "examples/certify/expected-failures.json")
      .replace(/^npx turnspec /, "node bin/turnspec.js ");
    expect(command).toMatch(/^node bin\/turnspec\.js certify --gateway-cmd /);
    // --list reads the options (yargs is strict: an unknown one is a usage error) and starts no gateway.
    const result = await sh(`${command} --list`);
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
  });
});

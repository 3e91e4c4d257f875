/**
 * The first hour of each kind of user, from packed tarballs in fresh folders, as the guides
 * tell it:
 *   - a protocol team: init → generate → build with strict tsc → generate --check → validate a
 *     transcript → diff a change (docs/any-protocol.md, docs/generate.md, docs/diff.md);
 *   - a client developer: @turnspec/client alone, the guide's examples compiled under the strict
 *     settings docs/install.md recommends, a turn over stdio and over WebSocket, and the browser
 *     example bundled with vite and run in Chromium against a gateway that allows the page's origin
 *     (docs/client.md);
 *   - a gateway vendor: the minimal gateway of docs/minimal-gateway.md in a folder of its own,
 *     certified at core by a relative command run from that folder (docs/certify.md).
 *
 * Slow (packs, installs, compilations, a browser): a file of its own.
 */
import { spawn, spawnSync } from "node:child_process";
import { copyFileSync, cpSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CHROMIUM_PATH, chromiumMissing } from "../chromium.js";
import { makeApp, packAll, repoRoot, STRICT_TSCONFIG, versionOf, WORKSPACES, type Packs } from "./packs.js";

const SLOW = 10 * 60_000;
const tarballsOf = (packs: Packs, ...names: string[]) => names.map((name) => packs.tarball(name));
const all = (packs: Packs) => WORKSPACES.map((w) => packs.tarball(w.manifest.name));

let packs: Packs;
beforeAll(async () => {
  packs = await packAll();
}, SLOW);
afterAll(() => packs?.remove());

describe("a protocol team's first hour", () => {
  it(
    "scaffolds, generates, builds, checks, validates and judges a change",
    async () => {
      const app = await makeApp(
        packs.work,
        "team",
        [...all(packs), `typescript@${versionOf("typescript")}`, `ts-morph@${versionOf("ts-morph")}`],
        { ignoreScripts: true },
      );
      const turnspec = (...args: string[]) => app.run(app.bin("turnspec"), args);
      expect(await turnspec("init", "proto", "--title", "notes protocol")).toContain("created turnspec.config.json");
      // The config's $schema points at the installed meta-schema.
      const config = JSON.parse(readFileSync(join(app.dir, "turnspec.config.json"), "utf8")) as { $schema: string };
      expect(config.$schema).toBe("node_modules/@turnspec/generator/meta/config.schema.json");
      await turnspec("generate", "--typecheck");
      app.write(
        "src/main.ts",
        `import { createInMemoryPair } from "@turnspec/rpc";
import { ProtocolClient, createDispatcher } from "../generated/index.js";
const dispatcher = createDispatcher({ "note/add": (params) => ({ id: \`n-\${params.text.length}\` }) });
const [clientSide, serverSide] = createInMemoryPair();
serverSide.onmessage = (frame: string) => {
  void dispatcher.handleFrame(frame, undefined).then((reply) => (reply === undefined ? undefined : serverSide.send(reply)));
};
await serverSide.start();
const client = new ProtocolClient(clientSide);
await client.start();
console.log((await client.noteAdd({ text: "hello" })).id);
await client.close();
`,
      );
      app.write("tsconfig.json", {
        ...STRICT_TSCONFIG,
        compilerOptions: { ...STRICT_TSCONFIG.compilerOptions, rootDir: "." },
        include: ["src", "generated"],
      });
      await app.run(app.bin("tsc"), ["-p", "tsconfig.json"]);
      expect((await app.node("build/src/main.js")).trim()).toBe("n-5");
      expect(await turnspec("generate", "--check")).toContain("up to date");
      app.write(
        "session.jsonl",
        `${JSON.stringify({ jsonrpc: "2.0", id: 1, method: "note/add", params: { text: "hi" } })}\n${JSON.stringify({ jsonrpc: "2.0", id: 1, result: { id: "n-1" } })}\n`,
      );
      expect(await turnspec("validate", "session.jsonl")).toContain("all valid");
      app.write("bad.jsonl", `${JSON.stringify({ jsonrpc: "2.0", id: 1, method: "note/ad", params: { text: "" } })}\n`);
      await expect(turnspec("validate", "bad.jsonl")).rejects.toThrow(/note\/add/);
      // A new required field: old senders break.
      cpSync(join(app.dir, "proto"), join(app.dir, "proto-v1"), { recursive: true });
      const params = JSON.parse(readFileSync(join(app.dir, "proto/note_add_params.json"), "utf8")) as {
        required: string[];
        properties: Record<string, unknown>;
      };
      params.required.push("owner");
      params.properties.owner = { type: "string", description: "Who adds it." };
      app.write("proto/note_add_params.json", params);
      const diff = spawnSync(app.bin("turnspec"), ["diff", "proto-v1", "proto"], {
        cwd: app.dir,
        encoding: "utf8",
        env: { ...process.env, NODE_OPTIONS: "" },
      });
      expect(diff.status, diff.stderr).toBe(1);
      expect(diff.stdout).toContain('field "owner" added, required');
    },
    SLOW,
  );
});

describe("a client developer's first hour", () => {
  const missing = chromiumMissing("the browser part of the client walk");

  it(
    "compiles the guide's examples strictly against the installed client, and runs a turn over stdio and over WebSocket",
    async () => {
      const app = await makeApp(packs.work, "client", [
        ...tarballsOf(packs, "@turnspec/rpc", "@turnspec/protocol", "@turnspec/client"),
        `typescript@${versionOf("typescript")}`,
        `@types/node@${versionOf("@types/node")}`,
      ]);
      mkdirSync(join(app.dir, "src"));
      for (const name of readdirSync(join(repoRoot, "examples/client")).filter((f) => f.endsWith(".ts")))
        copyFileSync(join(repoRoot, "examples/client", name), join(app.dir, "src", name));
      app.write("tsconfig.json", {
        ...STRICT_TSCONFIG,
        compilerOptions: { ...STRICT_TSCONFIG.compilerOptions, types: ["node"], lib: ["ES2022", "DOM"] },
      });
      await app.run(app.bin("tsc"), ["-p", "tsconfig.json"]);
      const gateway = `${process.execPath} ${join(repoRoot, "bin/turnspec.js")} serve --stdio --memory`;
      const stdio = await app.run(process.execPath, ["build/stdio.js"], { TURNSPEC_STDIO_COMMAND: gateway });
      expect(stdio).toContain("Hello over stdio.");
      expect(stdio).toContain("[Completed]");
      // Over WebSocket: the gateway started with a token, the example reading the URL and token from the environment.
      const server = spawn(process.execPath, [join(repoRoot, "bin/turnspec.js"), "serve", "--port", "0", "--memory"], {
        env: { ...process.env, TURNSPEC_TOKEN: "walk-token" },
        stdio: ["ignore", "ignore", "pipe"],
      });
      try {
        const url = await new Promise<string>((resolve, reject) => {
          let err = "";
          server.stderr.on("data", (chunk: Buffer) => {
            err += chunk.toString("utf8");
            const match = /(ws:\/\/\S+?)\/?\s/.exec(err);
            if (match) resolve(`${match[1]}/`);
          });
          server.once("exit", (code) => reject(new Error(`the gateway exited with ${code}: ${err}`)));
        });
        const status = await app.run(process.execPath, ["build/status.js"], { TURNSPEC_URL: url, TURNSPEC_TOKEN: "walk-token" });
        expect(status).toMatch(/Completed/);
      } finally {
        server.kill();
      }
    },
    SLOW,
  );

  it.skipIf(missing !== undefined)(
    "bundles the browser example with vite and streams a turn in Chromium, approving its tool",
    async () => {
      const app = await makeApp(packs.work, "browser", [
        ...tarballsOf(packs, "@turnspec/rpc", "@turnspec/protocol", "@turnspec/client"),
        `vite@${versionOf("vite")}`,
      ]);
      copyFileSync(join(repoRoot, "examples/client/browser.ts"), join(app.dir, "browser.ts"));
      app.write(
        "vite.config.mjs",
        `export default { logLevel: "warn", build: { outDir: "dist", lib: { entry: "browser.ts", formats: ["es"], fileName: () => "browser.js" } } };\n`,
      );
      await app.run(app.bin("vite"), ["build"]);
      const bundle = readFileSync(join(app.dir, "dist/browser.js"), "utf8");
      // The page is served from its own origin, which the gateway is told to allow.
      const page = createServer((request, response) => {
        if (request.url === "/browser.js") response.writeHead(200, { "content-type": "text/javascript" }).end(bundle);
        else
          response
            .writeHead(200, { "content-type": "text/html" })
            .end(
              `<!doctype html><div id="turn"></div><script type="module">import { runTurn } from "/browser.js"; globalThis.runTurn = runTurn;</script>`,
            );
      });
      await new Promise<void>((resolve) => page.listen(0, "127.0.0.1", resolve));
      const origin = `http://127.0.0.1:${(page.address() as { port: number }).port}`;
      const server = spawn(
        process.execPath,
        [join(repoRoot, "bin/turnspec.js"), "serve", "--port", "0", "--memory", "--allow-origin", origin],
        { env: { ...process.env, TURNSPEC_TOKEN: "browser-walk" }, stdio: ["ignore", "ignore", "pipe"] },
      );
      const { chromium } = await import("playwright-core");
      const browser = await chromium.launch({ executablePath: CHROMIUM_PATH, args: ["--no-sandbox", "--disable-background-networking"] });
      try {
        const url = await new Promise<string>((resolve, reject) => {
          let err = "";
          server.stderr.on("data", (chunk: Buffer) => {
            err += chunk.toString("utf8");
            const match = /(ws:\/\/\S+?)\/?\s/.exec(err);
            if (match) resolve(`${match[1]}/`);
          });
          server.once("exit", (code) => reject(new Error(`the gateway exited with ${code}: ${err}`)));
        });
        const tab = await browser.newPage();
        const dialogs: string[] = [];
        tab.on("dialog", (dialog) => {
          dialogs.push(dialog.message());
          void dialog.accept();
        });
        await tab.goto(origin);
        await tab.waitForFunction(() => "runTurn" in globalThis);
        const script = JSON.stringify({
          script: [
            { tool: "shell", args: { command: "echo from-the-walk" } },
            { say: "Done in the browser.", chunks: 2 },
          ],
        });
        await tab.evaluate(
          ([gateway, text]) =>
            (globalThis as unknown as { runTurn: (u: string, t: string, x: string, o: HTMLElement) => Promise<void> }).runTurn(
              gateway,
              "browser-walk",
              text,
              document.getElementById("turn")!,
            ),
          [url, script] as const,
        );
        expect(dialogs).toEqual([expect.stringContaining("echo from-the-walk")]);
        expect(await tab.textContent("#turn p")).toBe("Done in the browser.");
        expect(await tab.getAttribute("#turn", "data-status")).toBe("Completed");
      } finally {
        await browser.close();
        server.kill();
        page.close();
      }
    },
    SLOW,
  );
});

describe("a gateway vendor's first hour", () => {
  it(
    "certifies the minimal gateway at core from its own folder, by a relative command",
    async () => {
      const app = await makeApp(packs.work, "vendor", [...all(packs), `tsx@${versionOf("tsx")}`], { ignoreScripts: true });
      copyFileSync(join(repoRoot, "examples/gateways/minimal/gateway.ts"), join(app.dir, "gateway.ts"));
      const certified = spawnSync(
        app.bin("turnspec"),
        [
          "certify",
          "--gateway-cmd",
          "node --import tsx gateway.ts --provider-url {provider_url}",
          "--capabilities",
          "core",
          "--level",
          "core",
          "--json",
          "report.json",
        ],
        { cwd: app.dir, encoding: "utf8", timeout: 300_000, env: { ...process.env, NODE_OPTIONS: "" } },
      );
      expect(certified.status, `${certified.stdout}\n${certified.stderr}`).toBe(0);
      expect(certified.stdout).toContain("Certified");
      const report = JSON.parse(readFileSync(join(app.dir, "report.json"), "utf8")) as { status: string };
      expect(report.status).toBe("certified");
      writeFileSync(join(app.dir, "done"), "");
    },
    SLOW,
  );
});

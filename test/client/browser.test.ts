/**
 * The browser entry of the client SDK, bundled with vite into a temporary folder (a build
 * that reaches for a Node built-in fails) and run in headless Chromium against a gateway
 * the test starts on 127.0.0.1: a scripted turn whose streamed text and permission request
 * the page sees and answers, through the guide's browser example. Skipped, saying why, only when Chromium is absent (and never with CI=true: see ../chromium.ts).
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { builtinModules } from "node:module";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { chromium, type Browser } from "playwright-core";
import { build, type Plugin } from "vite";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startWebSocketServer, type RunningWebSocketServer } from "../../packages/rpc/src/transport/websocket.js";
import { CHROMIUM_PATH, chromiumMissing } from "../chromium.js";
import { script, startHarness, type Harness } from "../gateway/harness.js";
import type { runTurn } from "../../examples/client/browser.js";

interface Page {
  turnspec: { runTurn: typeof runTurn; refusedWith(url: string, token: string): Promise<string> };
}

const missing = chromiumMissing("browser client test");

const NODE_BUILTINS = new Set([...builtinModules, ...builtinModules.map((m) => `node:${m}`)]);

/** Fails the build at the first import of a Node built-in, naming the importer. */
const noNodeBuiltins: Plugin = {
  name: "no-node-builtins",
  enforce: "pre",
  resolveId(id, importer) {
    if (NODE_BUILTINS.has(id) || id.startsWith("node:"))
      throw new Error(`the browser bundle imports the Node built-in "${id}" from ${importer ?? "the entry"}`);
    return null;
  },
};

/** Bundles the browser app and returns the bundle's text. */
async function bundle(): Promise<string> {
  const outDir = mkdtempSync(join(tmpdir(), "turnspec-browser-"));
  try {
    await build({
      configFile: false,
      logLevel: "warn",
      plugins: [noNodeBuiltins],
      // The workspace packages, from their sources.
      resolve: { conditions: ["turnspec-source", "browser", "module", "import", "default"] },
      build: {
        outDir,
        emptyOutDir: true,
        minify: false,
        lib: { entry: resolve("test/client/browser/app.ts"), formats: ["es"], fileName: () => "app.js" },
      },
    });
    return readFileSync(join(outDir, "app.js"), "utf8");
  } finally {
    rmSync(outDir, { recursive: true, force: true });
  }
}

describe.skipIf(missing !== undefined)(`the client SDK in a browser${missing ? ` (skipped: ${missing})` : ""}`, () => {
  let h: Harness;
  let server: RunningWebSocketServer;
  let browser: Browser;
  let code: string;

  beforeAll(async () => {
    code = await bundle();
    h = await startHarness();
    // The test page is set with setContent: its origin is opaque ("null").
    server = await startWebSocketServer({
      token: "browser-token",
      allowedOrigins: ["null"],
      maxFrameBytes: 1024 * 1024,
      onConnection: (t) => h.gateway.connect(t),
    });
    browser = await chromium.launch({ executablePath: CHROMIUM_PATH });
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await server?.close();
    await h?.close();
  });

  async function page() {
    const p = await browser.newPage();
    const errors: string[] = [];
    p.on("pageerror", (e) => errors.push(e.message));
    await p.setContent("<!doctype html><title>turnspec client</title>");
    await p.addScriptTag({ content: code, type: "module" });
    await p.waitForFunction(() => "turnspec" in globalThis);
    return { p, errors };
  }

  it("bundles without Node built-ins and without the Node transports", () => {
    expect(code).not.toMatch(/from\s+["']node:|require\(["'](?:node:)?(?:fs|net|http|child_process|crypto)["']\)/);
    expect(code).not.toContain("spawnStdioTransport");
    expect(code).toContain("new Socket(");
  });

  it("streams a scripted turn's text and approves its permission request over the native WebSocket", async () => {
    const { p, errors } = await page();
    const dialogs: string[] = [];
    p.on("dialog", (dialog) => {
      dialogs.push(dialog.message());
      void dialog.accept();
    });
    const input = script({ tool: "shell", args: { command: "echo from-the-browser" } }, { say: "Approved and done.", chunks: 3 });
    await p.evaluate(
      ([url, token, text]) => {
        const output = document.body.appendChild(document.createElement("div"));
        output.id = "turn";
        return (globalThis as unknown as Page).turnspec.runTurn(url, token, text, output);
      },
      [server.url, "browser-token", input] as const,
    );
    expect(errors).toEqual([]);
    expect(dialogs).toEqual([expect.stringMatching(/^Allow shell\? .*echo from-the-browser/)]);
    expect(await p.textContent("#turn p")).toBe("Approved and done.");
    expect(await p.getAttribute("#turn", "data-status")).toBe("Completed");
    expect(await p.getAttribute("#turn", "data-failure")).toBeNull();
    expect(h.protocolErrors).toEqual([]);
    await p.close();
  });

  it("is refused with a clear error, without the token in it, when the token is wrong", async () => {
    const { p } = await page();
    const message = await p.evaluate(([url]) => (globalThis as unknown as Page).turnspec.refusedWith(url, "wrong-token"), [
      server.url,
    ] as const);
    expect(message).toContain(`cannot connect to ${server.url}`);
    // The page's origin (opaque here) is named as a likely cause, with the flag that allows it.
    expect(message).toContain("this page's origin null is not allowed by the gateway (start it with --allow-origin null)");
    expect(message).toContain("the token is wrong");
    expect(message).not.toContain("wrong-token");
    await p.close();
  });
});

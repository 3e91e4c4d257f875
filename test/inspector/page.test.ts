/**
 * The inspector page in headless Chromium, served by the inspector's server with the page
 * bundled the way the package build bundles it:
 *   - against the reference gateway (`turnspec serve --stdio --memory` as the gateway
 *     command): a supervised turn whose shell call is approved on the page, its text
 *     streaming in, every frame marked valid, turn/items, the work page and the routes,
 *     and the session exported as JSON lines that `turnspec validate` accepts; a
 *     screenshot is written to __output__/inspect.png for a person to look at;
 *   - against a stdio gateway that answers with an invalid frame: the finding, with its
 *     pointer and received value, on that frame, and the failure in words (a screenshot of
 *     it goes to __output__/invalid-frame.png);
 *   - against a WebSocket gateway whose connection drops mid-turn: the page reconnects and
 *     the turn's view goes on, nothing lost and nothing twice.
 * Skipped, saying why, only when Chromium is absent (and never with CI=true: ../chromium.ts).
 */
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { chromium, type Browser, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bundleInspectorPage } from "../../packages/inspect/bundle.js";
import { startInspector, type RunningInspector } from "../../packages/inspect/src/server.js";
import type { Transport } from "../../packages/rpc/src/index.js";
import { startWebSocketServer, type RunningWebSocketServer } from "../../packages/rpc/src/transport/websocket.js";
import { CHROMIUM_PATH, chromiumMissing } from "../chromium.js";
import { startHarness, type Harness } from "../gateway/harness.js";

const missing = chromiumMissing("inspector page test");
const repo = resolve(import.meta.dirname, "../..");
const output = join(import.meta.dirname, "__output__");
const cli = join(repo, "bin/turnspec.js");

describe.skipIf(missing !== undefined)(`turnspec inspect in a browser${missing ? ` (skipped: ${missing})` : ""}`, () => {
  let assetsDir: string;
  let browser: Browser;
  const running: Array<{ close(): Promise<void> }> = [];

  beforeAll(async () => {
    assetsDir = await bundleInspectorPage();
    browser = await chromium.launch({ executablePath: CHROMIUM_PATH });
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    for (const r of running.reverse()) await r.close();
  });

  async function open(inspector: RunningInspector): Promise<{ page: Page; errors: string[] }> {
    running.push(inspector);
    const page = await browser.newPage({ acceptDownloads: true, viewport: { width: 1500, height: 1000 } });
    const errors: string[] = [];
    page.on("pageerror", (e) => errors.push(e.message));
    await page.goto(inspector.url);
    // The token moved from the address bar to the tab's sessionStorage, never to a cookie.
    expect(new URL(page.url()).search).toBe("");
    expect(new URL(page.url()).hash).toBe("");
    expect(await page.context().cookies()).toEqual([]);
    return { page, errors };
  }

  interface ShownFrame {
    readonly direction?: string;
    readonly connection?: string;
    readonly strict?: string;
    readonly tolerant?: string;
    readonly ordering?: string;
    readonly summary: string;
  }
  const frames = (page: Page): Promise<ShownFrame[]> =>
    page.$$eval("#frames .frame", (list) =>
      list.map((f) => ({ ...(f as HTMLElement).dataset, summary: f.querySelector(".frame-summary")?.textContent ?? "" })),
    );

  it("drives a supervised turn of the reference gateway: text streams in, the shell call is approved on the page, every frame is valid", async () => {
    const cwd = mkdtempSync(join(tmpdir(), "turnspec-inspect-"));
    const inspector = await startInspector({ gatewayCmd: `node ${cli} serve --stdio --memory`, cwd, assetsDir, log: () => undefined });
    const { page, errors } = await open(inspector);
    await page.waitForSelector('#connection-status[data-state="connected"]');

    await page.getByRole("button", { name: "Start thread" }).click();
    await page.waitForSelector("#threads button.selected");
    await page.selectOption("#turn-profile", "supervised");
    const script = [
      { tool: "shell", args: { command: "echo from-the-inspector" } },
      { say: "The shell said hello and the turn is done.", chunks: 4 },
    ];
    await page.fill("#turn-script", JSON.stringify(script));
    expect(await page.isChecked("#turn-use-script")).toBe(true);
    // Every text the answer shows on its way, to see it stream in rather than land whole.
    await page.evaluate(() => {
      const seen: string[] = [];
      (globalThis as unknown as { answers: string[] }).answers = seen;
      new MutationObserver(() => {
        const text = document.querySelector(".agent-text")?.textContent;
        if (text && seen.at(-1) !== text) seen.push(text);
      }).observe(document.getElementById("turn")!, { subtree: true, childList: true, characterData: true });
    });
    await page.getByRole("button", { name: "Start turn" }).click();

    const approval = page.locator(".approval.open");
    await approval.waitFor();
    expect(await approval.textContent()).toContain("echo from-the-inspector");
    await approval.getByRole("button", { name: "Allow once" }).click();
    await page.waitForSelector('.turn .status[data-status="succeeded"]');
    expect(await page.textContent(".agent-text")).toBe("The shell said hello and the turn is done.");
    const answers = await page.evaluate(() => (globalThis as unknown as { answers: string[] }).answers);
    expect(answers.length).toBeGreaterThan(1);
    expect(answers.at(-1)).toBe("The shell said hello and the turn is done.");
    for (const [i, text] of answers.entries()) if (i > 0) expect(text.startsWith(answers[i - 1]!)).toBe(true);
    const shell = page.locator('.item[data-item-type="commandExecution"]');
    expect(await shell.getAttribute("data-item-status")).toBe("completed");
    expect(await shell.textContent()).toContain("from-the-inspector");
    expect(await page.textContent(".approval")).toContain("Resolved: allow_once");

    const seen = await frames(page);
    expect(seen.length).toBeGreaterThan(10);
    expect(seen.filter((f) => f.summary === "item/agent_message/delta").length).toBeGreaterThan(1);
    expect(seen.some((f) => f.direction === "sent" && f.summary.startsWith("turn/permission/request/respond"))).toBe(true);
    expect(seen.filter((f) => f.strict !== "valid" || f.tolerant !== "valid" || f.ordering !== "ok")).toEqual([]);

    // The turn's log, its work page and the thread's routes, each from the gateway.
    await page.getByRole("button", { name: "turn/items" }).click();
    await page.waitForSelector('#inspect-output[data-showing="items"]');
    expect(await page.textContent("#inspect-output")).toContain("turn/completed");
    await page.getByRole("button", { name: "Work pages" }).click();
    await page.waitForSelector('#inspect-output[data-showing="work"] tr[data-work-item]');
    expect(await page.textContent("#inspect-output table")).toContain("commandExecution");
    await page.getByRole("button", { name: "Routes of the thread" }).click();
    await page.waitForSelector('#inspect-output[data-showing="routes"]');
    expect(await page.textContent("#inspect-output")).toMatch(/From turn turn_\w+: 0 routes/);

    mkdirSync(output, { recursive: true });
    await page.getByRole("button", { name: "turn/items" }).click();
    await page.screenshot({ path: join(output, "inspect.png"), fullPage: true });

    // The export is a session `turnspec validate` accepts, ordering rules included.
    const [download] = await Promise.all([page.waitForEvent("download"), page.getByRole("button", { name: /Export session/ }).click()]);
    const file = join(cwd, "session.jsonl");
    await download.saveAs(file);
    const lines = readFileSync(file, "utf8").trim().split("\n");
    expect(lines.length).toBe((await frames(page)).length);
    // Each line records who sent the frame: the page is the client.
    expect(JSON.parse(lines[0]!)).toMatchObject({ from: "client", message: { jsonrpc: "2.0", method: expect.any(String) } });
    expect(new Set(lines.map((l) => (JSON.parse(l) as { from: string }).from))).toEqual(new Set(["client", "server"]));
    const validated = spawnSync(process.execPath, [cli, "validate", file], { encoding: "utf8", cwd: repo });
    expect(validated.stdout + validated.stderr).toContain("all valid");
    expect(validated.status).toBe(0);
    expect(errors).toEqual([]);
    await page.close();
  }, 120_000);

  it("shows the finding on the frame a gateway got wrong, with its pointer and the value received", async () => {
    const inspector = await startInspector({
      gatewayCmd: `node ${join(import.meta.dirname, "fake-gateway.mjs")}`,
      assetsDir,
      log: () => undefined,
    });
    const { page, errors } = await open(inspector);
    await page.waitForSelector('#connection-status[data-state="connected"]');
    await page.getByRole("button", { name: "Start thread" }).click();
    const bad = page.locator('#frames .frame[data-direction="received"][data-strict="invalid"]');
    await bad.waitFor();
    expect(await bad.getAttribute("data-tolerant")).toBe("invalid");
    await bad.locator("summary").click();
    // The body is built as the frame opens.
    await bad.locator(".finding").first().waitFor();
    const findings = await bad.locator(".finding").allTextContents();
    expect(findings.some((f) => f.includes("/result/thread/mode") && f.includes('received "Bogus"') && f.startsWith("strict"))).toBe(true);
    expect(findings.some((f) => f.startsWith("tolerant") && f.includes("/result/thread/mode"))).toBe(true);
    // The request that was answered is valid; only the answer is marked.
    expect((await frames(page)).find((f) => f.direction === "sent")).toMatchObject({ strict: "valid", tolerant: "valid" });
    mkdirSync(output, { recursive: true });
    await page.screenshot({ path: join(output, "invalid-frame.png"), fullPage: true });
    const problem = await page.locator(".problems").textContent();
    expect(problem).toContain("thread/start failed");
    expect(problem).not.toMatch(/\n\s+at /);
    expect(errors).toEqual([]);
    await page.close();
  }, 60_000);

  describe("with a WebSocket gateway", () => {
    let h: Harness;
    let gateway: RunningWebSocketServer;
    const gatewaySide: Transport[] = [];
    let held: Promise<void> = Promise.resolve();

    beforeAll(async () => {
      // Quick retries that run out after two attempts, so that a turn can block and be resumed.
      h = await startHarness({
        config: { providers: { retry: { max_attempts: 2, initial_delay_ms: 2, backoff_multiplier: 3, max_delay_ms: 5 } } },
      });
      gateway = await startWebSocketServer({
        token: "gw-token",
        maxFrameBytes: 1024 * 1024,
        onConnection: (t) => {
          gatewaySide.push(t);
          // While held, a new connection waits unserved (its frames queue), as a gateway slow to take it up.
          void held.then(() => h.gateway.connect(t));
        },
      });
      running.push(h, gateway);
    });

    async function openOnThread(): Promise<{ page: Page; errors: string[] }> {
      const inspector = await startInspector({ gatewayUrl: gateway.url, gatewayToken: "gw-token", assetsDir, log: () => undefined });
      const opened = await open(inspector);
      await opened.page.waitForSelector('#connection-status[data-state="connected"]');
      await opened.page.fill("#thread-cwd", h.cwd);
      await opened.page.getByRole("button", { name: "Start thread" }).click();
      await opened.page.waitForSelector("#threads button.selected");
      return opened;
    }

    it("connects to the gateway the user types in, after saying in words why a wrong token fails", async () => {
      const inspector = await startInspector({ assetsDir, log: () => undefined });
      const { page, errors } = await open(inspector);
      expect(await page.textContent("#connection-status")).toBe("Not connected");
      await page.getByLabel("Gateway URL").fill(gateway.url);
      await page.getByLabel("Token").fill("wrong-token");
      await page.getByRole("button", { name: "Connect", exact: true }).click();
      const error = page.locator(".gateway-form .failure");
      await expect.poll(() => error.textContent()).toContain("HTTP 401");
      expect(await error.textContent()).not.toContain("wrong-token");
      await page.getByLabel("Token").fill("gw-token");
      await page.getByRole("button", { name: "Connect", exact: true }).click();
      await page.waitForSelector('#connection-status[data-state="connected"]');
      expect(await page.textContent(".gateway-label")).toContain(gateway.url);
      await page.fill("#thread-cwd", h.cwd);
      await page.getByRole("button", { name: "Start thread" }).click();
      await page.waitForSelector("#threads button.selected");
      expect(errors).toEqual([]);
      await page.close();
    }, 60_000);

    it("pages through a turn's work, older rows added to the newest page", async () => {
      const { page, errors } = await openOnThread();
      const calls = Array.from({ length: 12 }, (_, i) => ({ tool: "shell", args: { command: `echo call-${i}` } }));
      await page.fill("#turn-script", JSON.stringify([{ tools: calls }, { say: "Twelve calls made." }]));
      await page.getByRole("button", { name: "Start turn" }).click();
      await page.waitForSelector('.turn .status[data-status="succeeded"]');
      await page.getByRole("button", { name: "Work pages" }).click();
      const rows = page.locator("#inspect-output tr[data-work-item]");
      await rows.first().waitFor();
      const newest = await rows.count();
      expect(newest).toBe(10);
      const older = page.getByRole("button", { name: "Older" });
      expect(await older.isEnabled()).toBe(true);
      await older.click();
      await expect.poll(() => rows.count()).toBeGreaterThan(newest);
      expect(await page.textContent("#inspect-output table")).toContain("commandExecution");
      expect(errors).toEqual([]);
      await page.close();
    }, 60_000);

    it("denies one shell call, and allows another for the rest of the turn", async () => {
      const { page, errors } = await openOnThread();
      await page.selectOption("#turn-profile", "supervised");
      const shell = (command: string) => ({ tool: "shell", args: { command } });
      await page.fill("#turn-script", JSON.stringify([shell("echo denied"), shell("echo again"), shell("echo again"), { say: "Done." }]));
      await page.getByRole("button", { name: "Start turn" }).click();
      const open = page.locator(".approval.open");
      await open.waitFor();
      await open.getByRole("button", { name: "Deny" }).click();
      await page.waitForSelector('.approval:not(.open) >> text="Resolved: deny"');
      await page.locator(".approval.open").waitFor();
      await page.locator(".approval.open").getByRole("button", { name: "Allow for this turn" }).click();
      await page.waitForSelector('.turn .status[data-status="succeeded"]');
      // The same call again needed no approval: the answer covered it for the rest of the turn.
      expect(await page.locator(".approval").allTextContents()).toEqual([
        expect.stringContaining("Resolved: deny"),
        expect.stringContaining("Resolved: allow_for_turn"),
      ]);
      expect(
        await page
          .locator('.item[data-item-type="commandExecution"]')
          .evaluateAll((items) => items.map((i) => (i as HTMLElement).dataset.itemStatus)),
      ).toEqual(["declined", "completed", "completed"]);
      expect(errors).toEqual([]);
      await page.close();
    }, 60_000);

    it("answers a question with its option buttons", async () => {
      const { page, errors } = await openOnThread();
      const questions = [{ header: "Target", question: "Where should it go?", options: [{ label: "Staging" }, { label: "Production" }] }];
      await page.fill("#turn-script", JSON.stringify([{ tool: "ask_question", args: { questions } }, { say: "Going to staging." }]));
      await page.getByRole("button", { name: "Start turn" }).click();
      const question = page.locator(".question.open");
      await question.waitFor();
      expect(await question.textContent()).toContain("Where should it go?");
      expect(await page.getAttribute(".turn .status", "data-status")).toBe("awaiting_hitl");
      // Real buttons: reached and pressed from the keyboard.
      await question.getByRole("button", { name: "Staging" }).focus();
      await page.keyboard.press("Enter");
      await page.waitForSelector('.turn .status[data-status="succeeded"]');
      expect(await page.textContent(".question")).toContain("Resolved: answered (Staging)");
      const sent = (await frames(page)).find((f) => f.direction === "sent" && f.summary.startsWith("turn/question/respond"));
      expect(sent).toMatchObject({ strict: "valid" });
      expect(errors).toEqual([]);
      await page.close();
    }, 60_000);

    it("resumes a blocked turn and cancels a running one", async () => {
      const { page, errors } = await openOnThread();
      // Attempts 1 and 2 fail and exhaust the retries: the turn blocks; attempt 3, after the resume, answers.
      await page.fill(
        "#turn-script",
        JSON.stringify([{ say: "Back after the resume.", fail_attempts: 2, fail_message: "service unavailable" }]),
      );
      await page.getByRole("button", { name: "Start turn" }).click();
      await page.waitForSelector('.turn .status[data-status="blocked"]');
      expect(await page.textContent(".turn .timeline")).toContain("item/recovery_exhausted");
      expect(await page.isDisabled("text=Cancel turn")).toBe(true);
      await page.getByRole("button", { name: "Resume turn" }).click();
      await page.waitForSelector('.turn .status[data-status="succeeded"]');
      expect(await page.textContent(".agent-text")).toBe("Back after the resume.");

      await page.fill("#turn-script", JSON.stringify([{ say: "never said", delay_ms: 30_000 }]));
      await page.getByRole("button", { name: "Start turn" }).click();
      await page.waitForSelector('.turn .status[data-status="running"]');
      await page.getByRole("button", { name: "Cancel turn" }).click();
      await page.waitForSelector('.turn .status[data-status="cancelled"]');
      expect(await page.textContent(".turn .failure")).toContain("was cancelled");
      expect((await frames(page)).filter((f) => f.strict !== "valid" || f.ordering !== "ok")).toEqual([]);
      expect(errors).toEqual([]);
      await page.close();
    }, 60_000);

    it("catches up from turn/items what the gateway sent while the connection was down, and judges the turn as one stream", async () => {
      const { page, errors } = await openOnThread();
      await page.fill(
        "#turn-script",
        JSON.stringify([
          { tool: "shell", args: { command: "echo during-the-gap" }, delay_ms: 300 },
          { say: "Said after the gap.", delay_ms: 2500, chunks: 3 },
        ]),
      );
      await page.getByRole("button", { name: "Start turn" }).click();
      await page.waitForSelector('.turn .status[data-status="running"]');
      let release!: () => void;
      held = new Promise<void>((resolve) => (release = resolve));
      await Promise.all(gatewaySide.splice(0).map((t) => t.close()));
      // The page is back on a socket the gateway does not serve yet; the shell call runs meanwhile.
      await page.waitForSelector('#connection-status[data-state="connected"]:text("reconnected")');
      const threadId = (await page.getAttribute("#threads button.selected", "data-thread-id"))!;
      const turnId = (await page.getAttribute(".turn", "data-turn-id"))!;
      const shellDone = async () =>
        (await h.client.turnItems({ thread_id: threadId, turn_id: turnId })).events.some(
          (e) => e.method === "item/completed" && (e.params as { item: { type: string } }).item.type === "commandExecution",
        );
      await expect.poll(shellDone, { timeout: 10_000 }).toBe(true);
      release();
      held = Promise.resolve();
      await page.waitForSelector('.turn .status[data-status="succeeded"]');
      expect(await page.textContent(".agent-text")).toBe("Said after the gap.");
      expect(await page.locator('.item[data-item-type="commandExecution"]').count()).toBe(1);
      expect(await page.textContent('.item[data-item-type="commandExecution"]')).toContain("during-the-gap");
      const seen = await frames(page);
      expect(seen.find((f) => f.connection === "2" && f.summary.startsWith("result of turn/items"))).toBeDefined();
      // The shell call came in the turn/items result; the answer streamed live after it, on the new connection.
      expect(seen.filter((f) => f.connection === "2" && f.summary === "item/completed").length).toBeGreaterThan(0);
      expect(seen.filter((f) => f.connection === "2" && f.summary === "item/agent_message/delta").length).toBeGreaterThan(0);
      expect(seen.filter((f) => f.strict !== "valid" || f.tolerant !== "valid" || f.ordering !== "ok")).toEqual([]);
      // `turnspec validate` reads the export as one live stream: the jump after the gap is its only finding.
      const [download] = await Promise.all([page.waitForEvent("download"), page.getByRole("button", { name: /Export session/ }).click()]);
      const file = join(h.cwd, "gap.jsonl");
      await download.saveAs(file);
      const validated = spawnSync(process.execPath, [cli, "validate", "--json", file], { encoding: "utf8", cwd: repo });
      const report = JSON.parse(validated.stdout) as { findings: Array<{ message: string }> };
      expect(report.findings.map((f) => f.message)).toEqual([
        expect.stringMatching(/^breaks ordering rule TURN-ORDER-SEQUENCE: [\w/]+ for turn .* has \/sequence \d+; expected \d+ after \d+/),
      ]);
      expect(errors).toEqual([]);
      await page.close();
    }, 60_000);

    it("reconnects when the connection drops mid-turn and keeps the view: the turn goes on, nothing missed, nothing twice", async () => {
      const inspector = await startInspector({ gatewayUrl: gateway.url, gatewayToken: "gw-token", assetsDir, log: () => undefined });
      const { page, errors } = await open(inspector);
      await page.waitForSelector('#connection-status[data-state="connected"]');
      await page.fill("#thread-cwd", h.cwd);
      await page.getByRole("button", { name: "Start thread" }).click();
      await page.waitForSelector("#threads button.selected");
      await page.fill(
        "#turn-script",
        JSON.stringify([{ reasoning: "thinking first", say: "Arrived after the reconnect.", delay_ms: 3000, chunks: 3 }]),
      );
      await page.getByRole("button", { name: "Start turn" }).click();
      await page.waitForSelector('.turn .status[data-status="running"]');
      // The gateway drops the connection while the model is still "thinking".
      await Promise.all(gatewaySide.splice(0).map((t) => t.close()));
      await page.waitForSelector('#connection-status[data-state="connected"]:text("reconnected")');
      await page.waitForSelector('.turn .status[data-status="succeeded"]');
      expect(await page.locator(".item-agentMessage").count()).toBe(1);
      expect(await page.locator(".item-userMessage").count()).toBe(1);
      expect(await page.textContent(".agent-text")).toBe("Arrived after the reconnect.");
      expect(await page.locator(".item-reasoning").count()).toBe(1);
      const seen = await frames(page);
      // The catch-up came from turn/items on the new connection.
      expect(seen.some((f) => f.direction === "sent" && f.summary.startsWith("turn/items"))).toBe(true);
      expect(new Set(seen.map((f) => f.connection)).size).toBe(2);
      expect(seen.filter((f) => f.strict !== "valid" || f.ordering !== "ok")).toEqual([]);
      const [download] = await Promise.all([page.waitForEvent("download"), page.getByRole("button", { name: /Export session/ }).click()]);
      const file = join(h.cwd, "reconnected.jsonl");
      await download.saveAs(file);
      // Nothing was sent while the connection was down, so the two connections make one valid stream.
      const validated = spawnSync(process.execPath, [cli, "validate", file], { encoding: "utf8", cwd: repo });
      expect(validated.stdout).toContain("all valid");
      expect(validated.status).toBe(0);
      expect(errors).toEqual([]);
      await page.close();
    }, 60_000);
  });
});

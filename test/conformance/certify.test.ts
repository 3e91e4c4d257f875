/**
 * `turnspec certify` against the reference gateway: certified at Full over stdio (through
 * the command line, with its report files) and over WebSocket (a `serve --port 0` started
 * here, pointed at the harness's model server).
 */
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { loadCatalogue } from "../../packages/conformance/src/catalogue.js";
import { QUESTION_TIMEOUT_MS, runCertification } from "../../packages/conformance/src/certify.js";
import { ModelServer } from "../../packages/conformance/src/model-server.js";
import type { RunReport } from "../../packages/conformance/src/results.js";
import { CLAIMED, notPassing, REFERENCE } from "./reference.js";

const catalogue = loadCatalogue().filter((r) => r.capability !== "client");
const cleanups: (() => unknown)[] = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

describe("turnspec certify against the reference gateway", () => {
  it("certifies it at Full over stdio: every requirement passes, the report files are written, exit 0", () => {
    const out = mkdtempSync(join(tmpdir(), "turnspec-certify-"));
    const run = spawnSync(
      "node",
      [
        "bin/turnspec.js",
        "certify",
        "--gateway-cmd",
        REFERENCE,
        "--capabilities",
        CLAIMED.join(","),
        "--json",
        join(out, "report.json"),
        "--junit",
        join(out, "junit.xml"),
        "--badge",
        join(out, "badge.json"),
      ],
      { encoding: "utf8", timeout: 120_000 },
    );
    const report = JSON.parse(readFileSync(join(out, "report.json"), "utf8")) as RunReport;
    expect(notPassing(report)).toEqual([]);
    expect(report).toMatchObject({ achievedLevel: "full", certified: true, requestedLevel: "full", staleExpectedFailures: [] });
    expect(report.results.map((r) => r.id)).toEqual(catalogue.map((r) => r.id));
    expect(run.stdout).toContain("Certified Full");
    expect(run.status).toBe(0);
    expect(readFileSync(join(out, "junit.xml"), "utf8")).toContain("<testsuites");
  });

  it("certifies it at Full over WebSocket", async () => {
    const model = new ModelServer();
    const providerUrl = await model.start();
    cleanups.push(() => model.close());
    const child = spawn(
      "node",
      [
        resolve("bin/turnspec.js"),
        "serve",
        "--port",
        "0",
        "--memory",
        "--token",
        "cert-secret",
        "--provider-url",
        providerUrl,
        "--question-timeout-ms",
        String(QUESTION_TIMEOUT_MS),
      ],
      {
        cwd: mkdtempSync(join(tmpdir(), "turnspec-certify-ws-")),
        stdio: ["ignore", "ignore", "pipe"],
      },
    );
    cleanups.push(
      () => new Promise((done) => (child.exitCode !== null ? done(undefined) : (child.once("exit", done), child.kill("SIGTERM")))),
    );
    let stderr = "";
    const url = await new Promise<string>((found, fail) => {
      child.stderr.on("data", (chunk: Buffer) => {
        stderr += chunk.toString();
        const match = /listening on (ws:\/\/\S+)/.exec(stderr);
        if (match) found(match[1]!);
      });
      child.once("exit", (code) => fail(new Error(`serve exited with ${code}: ${stderr}`)));
    });
    const report = await runCertification({
      gatewayUrl: url,
      token: "cert-secret",
      model,
      capabilities: CLAIMED,
      level: "full",
      selected: new Set(catalogue.map((r) => r.id)),
      expectedFailures: [],
    });
    expect(notPassing(report)).toEqual([]);
    expect(report).toMatchObject({ achievedLevel: "full", certified: true, gateway: { url } });
  });
});

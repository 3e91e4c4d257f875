/**
 * Client certification: `turnspec certify --client-cmd` plays the gateway and drives the
 * client under test through the command protocol. The SDK's reference driver certifies at
 * Full; three broken clients (test/conformance/broken-clients/) each fail the requirement
 * that names their fault, and nothing else.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { loadSuite } from "../../packages/conformance/src/catalogue.js";
import { runClientCertification } from "../../packages/conformance/src/client/certify-client.js";
import type { RunReport } from "../../packages/conformance/src/results.js";
import { notPassing } from "./reference.js";

const RUN_TS = "node --import ./scripts/from-source.mjs";
const REFERENCE_CLIENT = `${RUN_TS} examples/clients/typescript/driver.ts`;
const suite = loadSuite();
const clientRequirements = suite.requirements.filter((r) => r.capability === "client");

async function certifyClient(command: string) {
  const notices: string[] = [];
  const report = await runClientCertification({
    clientCmd: command,
    catalogue: clientRequirements,
    suite: { name: "turnspec", version: suite.current },
    level: "full",
    selected: new Set(clientRequirements.map((r) => r.id)),
    expectedFailures: [],
    stepTimeoutMs: 6000,
    onNotice: (text) => notices.push(text),
  });
  const by = (outcome: string) => report.results.filter((r) => r.outcome === outcome).map((r) => r.id);
  return {
    report,
    failed: by("fail"),
    errored: by("error"),
    notReached: by("not_reached"),
    notices,
    result: (id: string) => report.results.find((r) => r.id === id)!,
  };
}

describe("turnspec certify --client-cmd", () => {
  it("certifies the SDK's reference client driver at Full, with its reports, badge and certificate naming the client", () => {
    const out = mkdtempSync(join(tmpdir(), "turnspec-client-"));
    const run = spawnSync(
      "node",
      [
        "bin/turnspec.js",
        "certify",
        "--client-cmd",
        REFERENCE_CLIENT,
        "--subject",
        "@turnspec/client 0.2.0",
        "--json",
        join(out, "report.json"),
        "--badge",
        join(out, "badge.json"),
        "--certificate",
        join(out, "certificate.json"),
      ],
      { encoding: "utf8", timeout: 180_000 },
    );
    const report = JSON.parse(readFileSync(join(out, "report.json"), "utf8")) as RunReport;
    expect(notPassing(report)).toEqual([]);
    expect(report).toMatchObject({
      client: { command: REFERENCE_CLIENT },
      subject: "@turnspec/client 0.2.0",
      capabilities: ["client"],
      achievedLevel: "full",
      certified: true,
      status: "certified",
    });
    expect(report.results.map((r) => r.id)).toEqual(clientRequirements.map((r) => r.id));
    expect(run.stdout).toContain(`turnspec suite ${suite.current} certifying @turnspec/client 0.2.0: the client ${REFERENCE_CLIENT}`);
    expect(run.stdout).toContain("Certified Full");
    expect(run.status).toBe(0);
    expect(JSON.parse(readFileSync(join(out, "badge.json"), "utf8"))).toMatchObject({
      message: `Full (client), suite ${suite.current}`,
      color: "brightgreen",
    });
    expect(JSON.parse(readFileSync(join(out, "certificate.json"), "utf8"))).toMatchObject({
      certificate: {
        subject: { kind: "client", name: "@turnspec/client 0.2.0", command: REFERENCE_CLIENT },
        certified: true,
        certifiedCapabilities: ["client"],
      },
    });
  });

  it.each([
    [
      "no-approval-token",
      "CLIENT-APPROVAL-TOKEN",
      /the answer to req_\S+ carries no resolve_token; the request's is "rt\.[^"]+", to be sent back unmodified/,
    ],
    [
      "duplicates-after-reconnect",
      "CLIENT-RECONNECT-RESUME",
      /the client showed the deltas \["Part one, ","part two, ","Part one, ","part two, ","part three, ","the end\.",.*\], the gateway sent \["Part one, ","part two, ","part three, ","the end\."\], each once/,
    ],
    [
      "crash-on-unknown-notification",
      "CLIENT-UNKNOWN-NOTIFICATION",
      /^the client exited with code 1; its stderr ends with:\n[\s\S]*unhandled notification cert\/unknown_notification/,
    ],
    // Not one of the three the suite is judged by: it shows that the fields scenario sends fields no schema names.
    [
      "strict-fields",
      "CLIENT-UNKNOWN-FIELDS",
      /^the client exited with code 1; its stderr ends with:\nrefused the result of thread\/start: it does not match the schema exactly$/,
    ],
  ] as const)("the %s client fails %s alone", async (name, requirement, message) => {
    const { report, failed, errored, notReached, result } = await certifyClient(`${RUN_TS} test/conformance/broken-clients/${name}.ts`);
    expect(failed).toEqual([requirement]);
    expect(errored).toEqual([]);
    expect(notReached).toEqual([]);
    expect(result(requirement).message).toMatch(message);
    expect(result(requirement).transcript?.length).toBeGreaterThan(0);
    expect(report).toMatchObject({ certified: false, status: "not_certified", achievedLevel: "none" });
  });

  it("refuses the gateway's flags with --client-cmd, and a client that does not speak the command protocol fails with what it wrote", async () => {
    const mixed = spawnSync("node", ["bin/turnspec.js", "certify", "--client-cmd", "true", "--tool-map", "{}", "--capabilities", "core"], {
      encoding: "utf8",
    });
    expect([mixed.status, mixed.stderr]).toEqual([
      2,
      "turnspec certify: --capabilities, --tool-map are for certifying a gateway, not a client (--client-cmd)\n",
    ]);
    const old = spawnSync("node", ["bin/turnspec.js", "certify", "--client-cmd", "true", "--suite", "6.0"], { encoding: "utf8" });
    expect([old.status, old.stderr]).toEqual([
      2,
      "turnspec certify: suite 6.0 has no client requirements: clients are certified from suite 7.0 on\n",
    ]);

    const { report, result, notices } = await certifyClient(`sh -c "echo 'this is not the protocol'; echo oops >&2; exit 3"`);
    expect(result("CLIENT-TURN-FOLLOWED")).toMatchObject({
      outcome: "fail",
      message: "the client exited with code 3; its stderr ends with:\noops",
    });
    expect(notices).toContain('the client wrote a line that is not an answer: "this is not the protocol"');
    expect(report.certified).toBe(false);
  });
});

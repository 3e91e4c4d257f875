/**
 * The lint holds the directions between the packages (docs/README.md): an import against one fails
 * `npm run lint` with the rule's reason, and so does an import that reaches into another
 * package's files by a relative path. The wrong imports are written into temporary files
 * inside the packages, linted, and removed.
 */
import { execFile } from "node:child_process";
import { randomUUID } from "node:crypto";
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { ESLint } from "eslint";
import { describe, expect, it } from "vitest";

const root = join(import.meta.dirname, "..", "..");
const eslintBin = join(root, "node_modules", ".bin", "eslint");

/** Writes `source` into a temporary module of the package folder `dir`, runs `use` on its path, and removes it. */
async function withModule<T>(dir: string, source: string, use: (file: string) => Promise<T>): Promise<T> {
  const file = join(root, dir, "src", `lint-probe-${randomUUID().slice(0, 8)}.ts`);
  writeFileSync(file, source);
  try {
    return await use(file);
  } finally {
    rmSync(file, { force: true });
  }
}

/** The package-directions messages ESLint reports for `source` as a module of `dir`. */
async function directions(dir: string, source: string): Promise<string[]> {
  return withModule(dir, source, async (file) => {
    const [result] = await new ESLint({ cwd: root }).lintFiles([file]);
    return result!.messages.filter((m) => m.ruleId === "turnspec/package-directions").map((m) => m.message);
  });
}

describe("the lint's package directions", () => {
  it("fails `eslint` on a gateway module that imports the conformance suite, with the reason", async () => {
    const { code, stdout } = await withModule(
      "packages/gateway",
      'import { runCertify } from "@turnspec/conformance/certify-command";\nexport { runCertify };\n',
      (file) =>
        promisify(execFile)(eslintBin, [file], { cwd: root }).then(
          (done) => ({ code: 0, stdout: done.stdout }),
          (failed: { code: number; stdout: string }) => ({ code: failed.code, stdout: failed.stdout }),
        ),
    );
    expect(code).toBe(1);
    expect(stdout).toContain(
      '@turnspec/gateway may not import @turnspec/conformance: the reference gateway uses rpc and the protocol\'s generated code; it imports neither the conformance suite nor the client (docs/README.md, "Directions between the packages")  turnspec/package-directions',
    );
  }, 60_000);

  it.each([
    [
      "packages/gateway",
      "imports the client (a type)",
      'import type { GatewayConnection } from "@turnspec/client";\nexport type C = GatewayConnection;\n',
      "@turnspec/gateway may not import @turnspec/client",
    ],
    [
      "packages/generator",
      "names a type of the protocol",
      'export type T = import("@turnspec/protocol/types").Turn;\n',
      "@turnspec/generator may not import @turnspec/protocol",
    ],
    [
      "packages/rpc",
      "loads the protocol",
      'export const load = () => import("@turnspec/protocol");\n',
      "@turnspec/rpc may not import @turnspec/protocol",
    ],
    [
      "packages/client",
      "re-exports the gateway",
      'export { serve } from "@turnspec/gateway/serve";\n',
      "@turnspec/client may not import @turnspec/gateway",
    ],
    [
      "packages/conformance",
      "reaches into the gateway by a relative path",
      'import { Gateway } from "../../gateway/src/engine/gateway.js";\nexport { Gateway };\n',
      "@turnspec/conformance reaches into @turnspec/gateway's files by a relative path",
    ],
    [
      "packages/inspect",
      "reaches into generated/ by a relative path",
      'export * from "../../../generated/registry.js";\n',
      "@turnspec/inspect reaches into @turnspec/protocol's files by a relative path",
    ],
  ])(
    "refuses a module of %s that %s",
    async (dir, _what, source, message) => {
      const found = await directions(dir, source);
      expect(found).toHaveLength(1);
      expect(found[0]).toContain(message);
    },
    60_000,
  );

  it("lets each package use what the directions give it", async () => {
    const gateway = [
      'import { invalidParams } from "@turnspec/rpc";',
      'import type { Turn } from "@turnspec/protocol/types";',
      'import { zeroUsage } from "./turn/outcome.js";',
      "export type T = Turn;",
      "export { invalidParams, zeroUsage };",
    ];
    expect(await directions("packages/gateway", `${gateway.join("\n")}\n`)).toEqual([]);
    const cli = 'export const load = () => [import("@turnspec/gateway/serve"), import("@turnspec/conformance/certify-command")];\n';
    expect(await directions("packages/turnspec", cli)).toEqual([]);
  }, 60_000);
});

/**
 * Whole outputs compared with the files in test/conformance/report/golden/. After an
 * intended change to a reporter, rewrite them with
 *
 *   UPDATE_GOLDEN=1 npx vitest run test/conformance/report
 *
 * and review their diff before committing it.
 */
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { expect } from "vitest";

const dir = new URL("./golden/", import.meta.url);

export function expectGolden(name: string, actual: string): void {
  const file = new URL(name, dir);
  if (process.env.UPDATE_GOLDEN === "1") writeFileSync(file, actual);
  const hint = `test/conformance/report/golden/${name} differs from the output; if the change is intended, run UPDATE_GOLDEN=1 npx vitest run test/conformance/report`;
  expect(existsSync(file), hint).toBe(true);
  expect(actual, hint).toBe(readFileSync(file, "utf8"));
}

/**
 * The whole project compiles under the strict settings of tsconfig.json: the tests run
 * TypeScript without checking types, so this is where a type error anywhere is caught.
 */
import { Project, ts } from "ts-morph";
import { describe, expect, it } from "vitest";

describe("the project", () => {
  it("type-checks under strict settings", () => {
    const project = new Project({ tsConfigFilePath: "tsconfig.json" });
    const diagnostics = project.getPreEmitDiagnostics().map((d) => {
      const file = d.getSourceFile()?.getFilePath().replace(`${process.cwd()}/`, "") ?? "(project)";
      return `${file}:${d.getLineNumber() ?? 0} ${ts.flattenDiagnosticMessageText(d.compilerObject.messageText, " ")}`;
    });
    expect(diagnostics).toEqual([]);
  }, 180_000);
});

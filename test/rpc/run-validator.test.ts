/**
 * runValidator: the typed validation every generated `validate()` calls, over a fast
 * validator and the report validator of the same schemas.
 */
import { describe, expect, it } from "vitest";
import { runValidator, type RawValidator } from "../../packages/rpc/src/index.js";

const issue = (instancePath: string, keyword: string, params: Record<string, unknown>) => ({
  instancePath,
  keyword,
  params,
  schemaPath: "#",
});

/** A report validator refusing anything but a string, with two errors, counting its calls. */
function counted(): RawValidator & { calls: number } {
  const report = ((value: unknown): boolean => {
    report.calls++;
    report.errors = typeof value === "string" ? null : [issue("", "type", { type: "string" }), issue("", "minLength", { limit: 3 })];
    return typeof value === "string";
  }) as RawValidator & { calls: number };
  report.calls = 0;
  return report;
}

describe("runValidator", () => {
  it("reuses the errors of a fast validator that answered from the report validator", () => {
    const report = counted();
    // As the strict set's exports do: their own check first, the report validator for a refusal.
    const fast = ((value: unknown) => {
      if (typeof value === "string") return true;
      const valid = report(value);
      fast.errors = report.errors;
      return valid;
    }) as RawValidator;
    const result = runValidator(fast, 7, report);
    expect(result.ok).toBe(false);
    expect(result.ok ? [] : result.errors.map((e) => e.message)).toEqual(["must be string", "must be at least 3 characters long"]);
    expect(report.calls).toBe(1);
  });

  it("runs the report validator for a fast validator with errors of its own", () => {
    const report = counted();
    const fast = ((value: unknown) => {
      fast.errors = typeof value === "string" ? null : [issue("", "type", { type: "string" })];
      return typeof value === "string";
    }) as RawValidator;
    const result = runValidator(fast, 7, report);
    expect(result.ok ? [] : result.errors.map((e) => e.message)).toEqual(["must be string", "must be at least 3 characters long"]);
    expect(report.calls).toBe(1);
    expect(runValidator(fast, "ok", report)).toEqual({ ok: true, value: "ok" });
    expect(report.calls).toBe(1);
  });
});

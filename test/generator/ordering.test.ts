/**
 * The ordering section of protocol.json through the generator: the loader's explicit form
 * of the rules ("*" expanded from the schemas, key names resolved to pointers), the typed
 * constant in generated/ordering.ts, and a protocol that declares no ordering at all.
 */
import { cpSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, expectTypeOf, it } from "vitest";
import { generateFiles, type GeneratedFile } from "../../packages/generator/src/generate.js";
import { loadSchemas } from "../../packages/generator/src/load.js";
import { typeCheck } from "../../packages/generator/src/typecheck.js";
import { createOrderingChecker, orderingRules, type OrderingRuleId } from "../../generated/ordering.js";
import { useTempDirs } from "./temp-dirs.js";

const repoRoot = fileURLToPath(new URL("../..", import.meta.url));
const schemasDir = join(repoRoot, "schemas");
const miniDir = join(repoRoot, "test/fixtures/mini-protocol/schemas");

const tempDir = useTempDirs();

interface ProtocolFile {
  notifications: { name: string; params: { $ref: string } }[];
}
const protocol = JSON.parse(readFileSync(join(schemasDir, "protocol.json"), "utf8")) as ProtocolFile;
/** The notifications whose params schema requires every one of `fields`, read from the schema files. */
const requiring = (...fields: string[]) =>
  protocol.notifications
    .filter((n) => {
      const required = (JSON.parse(readFileSync(join(schemasDir, n.params.$ref), "utf8")) as { required?: string[] }).required ?? [];
      return fields.every((f) => required.includes(f));
    })
    .map((n) => n.name);

const TURN_SCOPE = [
  { name: "thread", pointer: "/thread_id" },
  { name: "turn", pointer: "/turn_id" },
];

describe("the rules of the turn protocol", () => {
  type Rule<I extends OrderingRuleId> = Extract<(typeof orderingRules)[number], { id: I }>;
  const rule = <I extends OrderingRuleId>(id: I) => orderingRules.find((r): r is Rule<I> => r.id === id)!;

  it("are the twelve rules, each failing the requirement of the same id but for the four of TURN-ORDER-SURFACED-LAST", () => {
    expect(orderingRules.map((r) => [r.id, r.requirement, r.kind])).toEqual([
      ["TURN-ORDER-STARTED-FIRST", "TURN-ORDER-STARTED-FIRST", "precedes"],
      ["ITEM-ORDER-STARTED-FIRST", "ITEM-ORDER-STARTED-FIRST", "precedes"],
      ["TURN-ORDER-ONE-TERMINAL", "TURN-ORDER-ONE-TERMINAL", "single_terminal"],
      ["TURN-ORDER-BLOCKED-QUIET", "TURN-ORDER-BLOCKED-QUIET", "quiet_after"],
      ["PERM-ORDER-RESOLVED-ONCE", "PERM-ORDER-RESOLVED-ONCE", "paired"],
      ["TURN-QUESTION-ORDER-RESOLVED-ONCE", "TURN-QUESTION-ORDER-RESOLVED-ONCE", "paired"],
      ["TURN-ORDER-COMPACTED-FIRST", "TURN-ORDER-COMPACTED-FIRST", "leads"],
      ["TURN-ORDER-INVITE-LAST", "TURN-ORDER-SURFACED-LAST", "trails"],
      ["TURN-ORDER-WALLET-LINK-LAST", "TURN-ORDER-SURFACED-LAST", "trails"],
      ["TURN-ORDER-WALLET-UPDATE-LAST", "TURN-ORDER-SURFACED-LAST", "trails"],
      ["TURN-ORDER-WALLET-REVOKE-LAST", "TURN-ORDER-SURFACED-LAST", "trails"],
      ["TURN-ORDER-SEQUENCE", "TURN-ORDER-SEQUENCE", "sequence"],
    ]);
    expectTypeOf<OrderingRuleId>().toEqualTypeOf<
      | "TURN-ORDER-STARTED-FIRST"
      | "ITEM-ORDER-STARTED-FIRST"
      | "TURN-ORDER-ONE-TERMINAL"
      | "TURN-ORDER-BLOCKED-QUIET"
      | "PERM-ORDER-RESOLVED-ONCE"
      | "TURN-QUESTION-ORDER-RESOLVED-ONCE"
      | "TURN-ORDER-COMPACTED-FIRST"
      | "TURN-ORDER-INVITE-LAST"
      | "TURN-ORDER-WALLET-LINK-LAST"
      | "TURN-ORDER-WALLET-UPDATE-LAST"
      | "TURN-ORDER-WALLET-REVOKE-LAST"
      | "TURN-ORDER-SEQUENCE"
    >();
  });

  it('expand "*" to the notifications whose params carry the scope, leaving out derived ones', () => {
    const ofTurn = requiring("thread_id", "turn_id");
    expect(rule("TURN-ORDER-STARTED-FIRST")).toMatchObject({
      scope: TURN_SCOPE,
      first: "turn/started",
      then: ofTurn.filter((n) => n !== "turn/started"),
    });
    expect(rule("TURN-ORDER-ONE-TERMINAL")).toMatchObject({
      terminals: ["turn/completed", "turn/failed"],
      after: ofTurn.filter((n) => n !== "turn/completed" && n !== "turn/failed"),
    });
    expect(rule("TURN-ORDER-BLOCKED-QUIET")).toMatchObject({
      notification: "turn/blocked",
      quiet: ofTurn,
      until: ["turn/resume", "turn/cancel"],
    });
    expect(rule("TURN-ORDER-SEQUENCE")).toMatchObject({
      field: "/sequence",
      notifications: requiring("thread_id", "turn_id", "sequence"),
      results: [{ method: "turn/items", items: "/events" }],
    });
    for (const derived of ["turn/work/items/changed", "turn/work/state/changed", "thread/timeline/blocks/changed"])
      expect(rule("TURN-ORDER-STARTED-FIRST").then).not.toContain(derived);
  });

  it("resolve key names to pointers, the item scope inside the turn", () => {
    expect(rule("ITEM-ORDER-STARTED-FIRST").scope).toEqual([...TURN_SCOPE, { name: "item", pointer: "/item_id" }]);
    expect(rule("PERM-ORDER-RESOLVED-ONCE")).toMatchObject({
      scope: TURN_SCOPE,
      subject: "request",
      open: { notification: "turn/permission/request/opened", key: "/request/request_id" },
      close: { notification: "turn/permission/request/resolved", key: "/request_id" },
    });
  });

  it("are what the loader reads from protocol.json", () => {
    expect(loadSchemas(schemasDir).ordering.map((r) => r.rule)).toEqual(orderingRules);
  });

  it("checkers are independent of each other", () => {
    const a = createOrderingChecker();
    const b = createOrderingChecker();
    const delta = {
      jsonrpc: "2.0",
      method: "item/agent_message/delta",
      params: { thread_id: "th", turn_id: "t", sequence: 2, item_id: "i", stream: "agent_message", delta: "x" },
    };
    expect(a.accept(delta, "server_to_client").map((v) => v.rule)).toEqual(["TURN-ORDER-STARTED-FIRST", "ITEM-ORDER-STARTED-FIRST"]);
    expect(b.violations).toEqual([]);
  });
});

describe("generated/ordering.ts is typed by the registry", () => {
  const committed: GeneratedFile[] = readdirSync(join(repoRoot, "generated"))
    .filter((path) => path.endsWith(".ts"))
    .sort()
    .map((path) => ({ path, content: readFileSync(join(repoRoot, "generated", path), "utf8") }));

  it("does not compile with a rule naming a notification or method the registry lacks", () => {
    const outDir = tempDir("turnspec-ordering-types-");
    const files = committed.map((f) =>
      f.path === "ordering.ts"
        ? {
            ...f,
            content: f.content.replace('"first": "turn/started"', '"first": "turn/begun"').replace('"turn/resume"', '"turn/restart"'),
          }
        : f,
    );
    expect(files.find((f) => f.path === "ordering.ts")!.content).toContain("turn/begun");
    const diagnostics = typeCheck(files, { outDir }).filter((d) => d.startsWith(join(outDir, "ordering.ts")));
    expect(diagnostics.join("\n")).toContain('"turn/begun"');
    expect(diagnostics.join("\n")).toContain('"turn/restart"');
  });
});

describe("a protocol without an ordering section", () => {
  it("gets an empty rule set, and its ordering.ts still type-checks", async () => {
    const dir = tempDir("turnspec-no-ordering-");
    cpSync(miniDir, dir, { recursive: true });
    const file = join(dir, "protocol.json");
    const { ordering: _ordering, ...rest } = JSON.parse(readFileSync(file, "utf8")) as Record<string, unknown>;
    writeFileSync(file, JSON.stringify(rest, null, 2));

    expect(loadSchemas(dir).ordering).toEqual([]);
    const files = await generateFiles({ schemasDir: dir });
    const ordering = files.find((f) => f.path === "ordering.ts")!.content;
    expect(ordering).toMatch(/export const orderingRules = \[\s*\] as const satisfies/);
    expect(typeCheck(files, { outDir: tempDir("turnspec-no-ordering-out-") })).toEqual([]);
  }, 60_000);
});

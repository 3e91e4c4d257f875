/**
 * Registry changes (protocol.json's table, errors.json, ordering rules), the roles a
 * message's direction gives its two sides, and the generated-code category.
 */
import { afterAll, describe, expect, it } from "vitest";
import { diffSchemas, renderText, type Change, type DiffReport } from "../../packages/generator/src/diff/index.js";
import type { JsonObject } from "../../packages/generator/src/model.js";
import {
  DEFAULT_ERRORS,
  DEFAULT_METHODS,
  DEFAULT_NOTIFICATIONS,
  DEFAULT_RULES,
  emittedValidator,
  loadProtocol,
  removeAll,
  type ProtocolSpec,
} from "./protocol.js";

const dirs: string[] = [];
afterAll(() => removeAll(dirs));

const run = (old: ProtocolSpec, next: ProtocolSpec, options: Parameters<typeof diffSchemas>[2] = {}): DiffReport =>
  diffSchemas(loadProtocol(old, dirs), loadProtocol(next, dirs), options);
const only = (report: DiffReport, verdict: Change["verdict"]) =>
  report.changes.filter((c) => c.verdict === verdict).map((c) => `${c.subject}: ${c.change}`);
const renameMethod = (to: string): JsonObject[] => [{ ...DEFAULT_METHODS[0]!, name: to }];

interface RegistryCase {
  readonly new: ProtocolSpec;
  readonly breaking: string[];
  readonly compatible?: string[];
  readonly undetermined?: string[];
}

const REGISTRY: Record<string, RegistryCase> = {
  "method removed": { new: { methods: [] }, breaking: ['thing/put: method "thing/put" removed'] },
  "method renamed (same params)": {
    new: { methods: renameMethod("thing/store") },
    breaking: ['thing/put: method "thing/put" renamed to "thing/store"'],
  },
  "method added": {
    new: { methods: [...DEFAULT_METHODS, { ...DEFAULT_METHODS[0]!, name: "thing/peek" }] },
    breaking: [],
    compatible: ['thing/peek: method "thing/peek" added'],
  },
  "notification removed": {
    new: { notifications: [DEFAULT_NOTIFICATIONS[0]!], rules: [] },
    breaking: ['thing/gone: notification "thing/gone" removed'],
    compatible: ["ordering: ordering rule THING-CHANGED-FIRST removed"],
  },
  "direction changed": {
    new: { notifications: [{ ...DEFAULT_NOTIFICATIONS[0]!, direction: "client_to_server" }, DEFAULT_NOTIFICATIONS[1]!] },
    breaking: ["thing/changed: direction server_to_client → client_to_server"],
  },
  "error code changed": {
    new: { errors: DEFAULT_ERRORS.map((e) => (e.reason === "thing_locked" ? { ...e, code: -32020 } : e)) },
    breaking: ['errors: error "thing_locked": code -32010 → -32020'],
  },
  "error reason renamed": {
    new: { errors: DEFAULT_ERRORS.map((e) => (e.reason === "thing_missing" ? { ...e, reason: "thing_absent" } : e)) },
    breaking: ['errors: error -32011: reason "thing_missing" → "thing_absent"'],
  },
  "error added to a method's list": {
    new: { methods: [{ ...DEFAULT_METHODS[0]!, errors: ["thing_locked", "thing_missing"] }] },
    breaking: ['thing/put: error "thing_missing" added to the method\'s errors'],
  },
  "error removed from a method's list": {
    new: { methods: [{ ...DEFAULT_METHODS[0]!, errors: [] }] },
    breaking: ['thing/put: error "thing_locked" removed from the method\'s errors'],
  },
  "params target changed to a structurally equal file": {
    new: {
      methods: [{ ...DEFAULT_METHODS[0]!, params: { $ref: "thing_put_args.json" } }],
      files: {
        "thing_put_args.json": {
          type: "object",
          additionalProperties: false,
          required: ["id", "v"],
          properties: { id: { type: "string" }, v: { type: "string" } },
        },
      },
    },
    breaking: [],
  },
  "params target changed to a different type": {
    new: {
      methods: [{ ...DEFAULT_METHODS[0]!, params: { $ref: "thing_put_args.json" } }],
      files: {
        "thing_put_args.json": { type: "object", additionalProperties: false, required: ["id"], properties: { id: { type: "string" } } },
      },
    },
    // One schema change, field v removed, breaks both ways: old clients send v, which the new
    // closed params reject; new clients leave out v, which old servers require.
    breaking: ['ThingPutArgs: field "v" removed (it was required)', 'ThingPutArgs: field "v" removed (it was required)'],
  },
  "ordering rule added": {
    new: {
      rules: [
        ...DEFAULT_RULES,
        {
          id: "THING-GONE-LAST",
          requirement: "THING-GONE-LAST",
          description: "Nothing after gone.",
          kind: "single_terminal",
          scope: ["thing"],
          terminals: ["thing/gone"],
          after: ["thing/changed"],
        },
      ],
    },
    breaking: ["ordering: ordering rule THING-GONE-LAST added"],
  },
  "ordering rule description changed": { new: { rules: [{ ...DEFAULT_RULES[0]!, description: "Reworded." }] }, breaking: [] },
};

describe("turnspec diff: registry changes", () => {
  it.each(Object.entries(REGISTRY))("%s", (_name, c) => {
    const report = run({}, c.new);
    expect(only(report, "breaking").sort()).toEqual(c.breaking.sort());
    expect(only(report, "compatible")).toEqual(c.compatible ?? []);
    expect(only(report, "undetermined")).toEqual(c.undetermined ?? []);
    for (const change of report.changes) expect(change.category).toBe("wire");
  });

  it("judges a rule whose notification list grows as tightened, and shrinks as loosened", () => {
    const notifications = [
      ...DEFAULT_NOTIFICATIONS,
      { name: "thing/moved", direction: "server_to_client", summary: "Moved.", params: { $ref: "thing_gone_params.json" } },
    ];
    const narrow: ProtocolSpec = { notifications, rules: [{ ...DEFAULT_RULES[0]!, then: ["thing/gone"] }] };
    const wide: ProtocolSpec = { notifications, rules: [{ ...DEFAULT_RULES[0]!, then: ["thing/gone", "thing/moved"] }] };
    expect(only(run(narrow, wide), "breaking")).toEqual(["ordering: ordering rule THING-CHANGED-FIRST tightened (then)"]);
    expect(only(run(wide, narrow), "compatible")).toEqual(["ordering: ordering rule THING-CHANGED-FIRST loosened (then)"]);
    expect(only(run(wide, narrow), "breaking")).toEqual([]);
    const other: ProtocolSpec = { notifications, rules: [{ ...DEFAULT_RULES[0]!, first: "thing/moved", then: ["thing/gone"] }] };
    expect(only(run(narrow, other), "undetermined")).toEqual(["ordering: ordering rule THING-CHANGED-FIRST changed (first)"]);
  });

  it("gives a removed method's change the request an old client still sends", () => {
    const [change] = run({}, { methods: [] }).changes;
    expect(change!.old).toEqual({ file: "protocol.json", pointer: "/methods/0" });
    expect(change!.new).toBeNull();
    expect(change!.why).toBe('old clients still call "thing/put"; a new server answers method_not_found');
    expect(change!.frame).toEqual({ jsonrpc: "2.0", id: 1, method: "thing/put", params: { id: "x", v: "x" } });
  });
});

describe("turnspec diff: who sends each message", () => {
  it("says a change to a type two messages share once, old → new, listing both messages", () => {
    const status = (values: string[]) => ({ "thing_status.json": { type: "string", enum: values } });
    const shared = (values: string[]): ProtocolSpec => ({
      files: status(values),
      result: {
        type: "object",
        additionalProperties: false,
        required: ["ok", "status"],
        properties: { ok: { type: "boolean" }, status: { $ref: "thing_status.json" } },
      },
      changed: {
        type: "object",
        additionalProperties: false,
        required: ["thing_id", "rev", "status"],
        properties: { thing_id: { type: "string" }, rev: { type: "integer", minimum: 0 }, status: { $ref: "thing_status.json" } },
      },
    });
    const report = run(shared(["Open", "Closed"]), shared(["Open", "Closed", "Paused"]));
    expect(report.changes).toHaveLength(1);
    expect(report.changes[0]).toMatchObject({
      subject: "ThingStatus",
      change: 'enum value "Paused" added',
      messages: ["thing/put result", "thing/changed params"],
      flow: "new_to_old",
    });
    expect(report.changes[0]!.why).toMatch(/^old clients reject what new servers send: /);
    expect(report.changes[0]!.counterexample).toMatchObject({ message: "thing/put result", value: { ok: false, status: "Paused" } }); // the shorter of the two
    const text = renderText(report);
    expect(text.match(/enum value "Paused" added/g)).toHaveLength(1);
    expect(text).toContain("      messages (2): thing/put result, thing/changed params\n");
    // Removed, it breaks the other deployment (new clients receiving from old servers), said the same way round.
    const removed = run(shared(["Open", "Closed", "Paused"]), shared(["Open", "Closed"]));
    expect(removed.changes.map((c) => [c.change, c.flow])).toEqual([['enum value "Paused" removed', "old_to_new"]]);
  });

  it("judges a notification's params for old clients receiving from a new server", () => {
    const report = run(
      {},
      {
        changed: {
          type: "object",
          additionalProperties: false,
          required: ["thing_id", "rev"],
          properties: { thing_id: { type: "string" }, rev: { type: "integer", minimum: 0 }, by: { type: "string" } },
        },
      },
    );
    const [change] = report.changes;
    expect(report.changes).toHaveLength(1);
    expect(change).toMatchObject({
      subject: "ThingChangedParams",
      messages: ["thing/changed params"],
      verdict: "breaking",
      flow: "new_to_old",
      sender: { version: "new", role: "server" },
      receiver: { version: "old", role: "client" },
    });
    expect(change!.why).toMatch(/^old clients reject what new servers send/);
    expect(change!.old).toEqual({ file: "thing_changed_params.json", pointer: "/additionalProperties" });
    expect(change!.new).toEqual({ file: "thing_changed_params.json", pointer: "/properties/by" });
    expect(change!.counterexample!.value).toEqual({ thing_id: "x", rev: 0, by: "x" });
  });

  it("judges a method's result for old clients receiving from a new server, and the reverse", () => {
    const old: ProtocolSpec = {
      result: { type: "object", additionalProperties: false, required: ["ok"], properties: { ok: { type: "boolean" } } },
    };
    const next: ProtocolSpec = {
      result: { type: "object", additionalProperties: false, required: [], properties: { ok: { type: "boolean" } } },
    };
    const oldModel = loadProtocol(old, dirs);
    const newModel = loadProtocol(next, dirs);
    const report = diffSchemas(oldModel, newModel);
    expect(report.changes.map((c) => [c.messages, c.flow, c.sender?.role, c.receiver?.role, c.verdict])).toEqual([
      [["thing/put result"], "new_to_old", "server", "client", "breaking"],
    ]);
    const value = report.changes[0]!.counterexample!.value;
    expect(emittedValidator(newModel, "strict", "thing_put_result.json")(value)).toBe(true);
    expect(emittedValidator(oldModel, "strict", "thing_put_result.json")(value)).toBe(false);
    expect(emittedValidator(oldModel, "tolerant", "thing_put_result.json")(value)).toBe(false);
  });

  it("counts nothing when the schemas are the same", () => {
    const report = run({}, {}, { categories: ["wire", "code"] });
    expect(report.changes).toEqual([]);
    expect(report.summary).toEqual({ breaking: 0, undetermined: 0, compatible: 0, accepted: 0 });
  });
});

describe("turnspec diff: generated code", () => {
  const box = (schema: JsonObject): ProtocolSpec => ({ v: { $ref: "box.json" }, files: { "box.json": schema } });
  // A title names its file, so a renamed type is a renamed file.
  const crate = (schema: JsonObject): ProtocolSpec => ({ v: { $ref: "crate.json" }, files: { "crate.json": schema } });
  const closed = (properties: JsonObject, required: string[]) => ({ type: "object", additionalProperties: false, required, properties });
  const CODE: Record<string, { old: ProtocolSpec; new: ProtocolSpec; want: string[] }> = {
    "type renamed with its file (wire unchanged)": {
      old: box(closed({ a: { type: "string" } }, ["a"])),
      new: crate(closed({ a: { type: "string" } }, ["a"])),
      want: ["Box: type Box renamed to Crate", "ThingPutParams: ThingPutParams.v: Box → Crate"],
    },
    "type removed with its file": {
      old: box(closed({ a: { type: "string" } }, ["a"])),
      new: {},
      want: ["Box: type Box removed", "ThingPutParams: ThingPutParams.v: Box → string"],
    },
    "field type changed": {
      old: box(closed({ a: { type: "string" } }, ["a"])),
      new: box(closed({ a: { type: "integer" } }, ["a"])),
      want: ["Box: Box.a: string → number"],
    },
    "field removed": {
      old: box(closed({ a: { type: "string" }, b: { type: "string" } }, ["a"])),
      new: box(closed({ a: { type: "string" } }, ["a"])),
      want: ["Box: Box.b removed"],
    },
    "field made optional": {
      old: box(closed({ a: { type: "string" } }, ["a"])),
      new: box(closed({ a: { type: "string" } }, [])),
      want: ["Box: Box.a: required → optional"],
    },
    "required field added": {
      old: box(closed({ a: { type: "string" } }, ["a"])),
      new: box(closed({ a: { type: "string" }, b: { type: "string" } }, ["a", "b"])),
      want: ["Box: Box.b added as required"],
    },
    "optional field added": {
      old: box(closed({ a: { type: "string" } }, ["a"])),
      new: box(closed({ a: { type: "string" }, b: { type: "string" } }, ["a"])),
      want: [],
    },
    "enum value added": {
      old: box(closed({ a: { type: "string", enum: ["x"] } }, ["a"])),
      new: box(closed({ a: { type: "string", enum: ["x", "y"] } }, ["a"])),
      want: ['Box: Box.a: "x" → "x" | "y"'],
    },
    "enum reordered (the same TypeScript type)": {
      old: box(closed({ a: { type: "string", enum: ["x", "y"] } }, ["a"])),
      new: box(closed({ a: { type: "string", enum: ["y", "x"] } }, ["a"])),
      want: [],
    },
    "method removed": { old: {}, new: { methods: [] }, want: ['MethodName: MethodName "thing/put" removed'] },
    "client_to_server method added (a server's handler map is incomplete)": {
      old: {},
      new: { methods: [...DEFAULT_METHODS, { ...DEFAULT_METHODS[0]!, name: "thing/peek" }] },
      want: ['MethodName: MethodName "thing/peek" added'],
    },
    "error reason removed": {
      old: {},
      new: { errors: DEFAULT_ERRORS.filter((e) => e.reason !== "thing_missing") },
      want: ['ErrorReason: ErrorReason "thing_missing" removed'],
    },
    "bound changed (not a type change)": {
      old: box(closed({ a: { type: "integer", minimum: 0 } }, ["a"])),
      new: box(closed({ a: { type: "integer", minimum: 1 } }, ["a"])),
      want: [],
    },
  };
  it.each(Object.entries(CODE))("%s", (_name, c) => {
    const report = run(c.old, c.new, { categories: ["code"] });
    expect(report.changes.every((ch) => ch.category === "code")).toBe(true);
    expect(only(report, "breaking")).toEqual(c.want);
  });

  it("keeps a wire-equal rename out of the wire category", () => {
    const old = box({ type: "object", additionalProperties: false, required: ["a"], properties: { a: { type: "string" } } });
    const next = crate({ type: "object", additionalProperties: false, required: ["a"], properties: { a: { type: "string" } } });
    expect(run(old, next).changes).toEqual([]);
  });
});

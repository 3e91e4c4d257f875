/**
 * The JSON examples copied verbatim from the references (test/fixtures/reference/) are
 * valid under the schemas, each read as what it is in the reference: a whole JSON-RPC
 * frame, a `{ method, params }` call, a method's result, a named type, an array of a
 * named type, or a fragment of turn/start params. Then broken variants of them are
 * rejected with the JSON pointer of the broken place, in strict and tolerant mode.
 */
import { readFileSync, readdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { classify, type ValidationIssue } from "@turnspec/rpc";
import { isMethodName, methods, type MethodName } from "../../generated/registry.js";
import type { TurnStartParams } from "../../generated/types.js";
import { validate, validateParams, validateResult, type TypeName, type ValidationMode, type ValidationResult } from "../../generated/validators.js";

const fixturesDir = fileURLToPath(new URL("../fixtures/reference/", import.meta.url));

/** How the reference presents each example, and so what it must validate as. */
type Reading =
  | { readonly as: "frame" } // a complete JSON-RPC request
  | { readonly as: "call" } // `{ method, params }` without jsonrpc and id
  | { readonly as: "result"; readonly method: MethodName }
  | { readonly as: "type"; readonly type: TypeName }
  | { readonly as: "array"; readonly of: TypeName }
  | { readonly as: "turn/start fragment" }; // some turn/start params fields on their own

const readings: Record<string, Reading> = {
  "capabilities_array.json": { as: "array", of: "TurnCapability" },
  "disclosure_policy.json": { as: "type", type: "AgentDelegationDisclosurePolicy" },
  "execution_backend_api_provider.json": { as: "turn/start fragment" },
  "execution_backend_cli_runtime.json": { as: "turn/start fragment" },
  "permission_profile_fragment.json": { as: "turn/start fragment" },
  "permission_respond_request.json": { as: "call" },
  "prompt_manifest.json": { as: "type", type: "PromptManifest" },
  "turn_cancel_request.json": { as: "call" },
  "turn_items_request.json": { as: "call" },
  "turn_items_result.json": { as: "result", method: "turn/items" },
  "turn_resume_request.json": { as: "call" },
  "turn_start_request.json": { as: "frame" },
  "turn_start_response.json": { as: "result", method: "turn/start" },
  "turn_work_items_get_request.json": { as: "call" },
  "turn_work_page_request.json": { as: "call" },
  "user_input_array.json": { as: "array", of: "UserInput" },
};

/** The smallest valid turn/start params, which a fragment is merged into. */
const minimalTurnStart: TurnStartParams = {
  thread_id: "thr_000000000000000001",
  turn_id: "trn_000000000000000001",
  input: [{ type: "text", text: "Summarize the open pull requests." }],
};

function load(file: string): any {
  return JSON.parse(readFileSync(`${fixturesDir}${file}`, "utf8"));
}

function issuesOf(result: ValidationResult<unknown>): ValidationIssue[] {
  return result.ok ? [] : result.errors;
}

function callOf(file: string, value: any): { method: MethodName; params: unknown } {
  const method = value?.method;
  if (typeof method !== "string" || !isMethodName(method)) throw new Error(`${file}: "${String(method)}" is not a method of the protocol`);
  return { method, params: value.params };
}

/**
 * Validates a fixture as what its reading says it is; returns the issues, with pointers
 * into the part that has a schema (the params of a frame or call, the element array of
 * an array fixture, the merged params of a fragment).
 */
function check(file: string, value: any, mode: ValidationMode = "strict"): ValidationIssue[] {
  const reading = readings[file];
  if (!reading) throw new Error(`${file} has no reading`);
  switch (reading.as) {
    case "frame": {
      const classified = classify(value);
      if (classified.kind !== "request") return [{ pointer: "", message: `is not a JSON-RPC request (${classified.kind === "invalid" ? classified.reason : classified.kind})` }];
      const { method, params } = callOf(file, classified.message);
      return issuesOf(validateParams(method, params, mode));
    }
    case "call": {
      const { method, params } = callOf(file, value);
      return issuesOf(validateParams(method, params, mode));
    }
    case "result":
      return issuesOf(validateResult(reading.method, value, mode));
    case "type":
      return issuesOf(validate(reading.type, value, mode));
    case "array": {
      if (!Array.isArray(value)) return [{ pointer: "", message: "must be array" }];
      return value.flatMap((element, index) =>
        issuesOf(validate(reading.of, element, mode)).map((issue) => ({ ...issue, pointer: `/${index}${issue.pointer}` })),
      );
    }
    case "turn/start fragment":
      return issuesOf(validateParams("turn/start", { ...minimalTurnStart, ...value }, mode));
  }
}

describe("reference fixtures", () => {
  it("every fixture file has a reading, and every reading a file", () => {
    const files = readdirSync(fixturesDir).filter((name) => name.endsWith(".json")).sort();
    expect(files).toEqual(Object.keys(readings).sort());
  });

  it.each(Object.keys(readings))("%s is valid as the reference presents it", (file) => {
    expect(check(file, load(file))).toEqual([]);
  });

  it("frames and calls name a method the client sends to the gateway", () => {
    for (const [file, reading] of Object.entries(readings)) {
      if (reading.as !== "frame" && reading.as !== "call") continue;
      const { method } = callOf(file, load(file));
      expect(methods[method].direction, file).toBe("client_to_server");
    }
  });

  it("frames are complete JSON-RPC requests and calls are not", () => {
    for (const [file, reading] of Object.entries(readings)) {
      if (reading.as === "frame") expect(classify(load(file)).kind, file).toBe("request");
      if (reading.as === "call") expect(load(file)).not.toHaveProperty("jsonrpc");
    }
  });

  it("fragments carry fields a turn/start fixture does not already hold", () => {
    // Merging must be what makes a fragment valid: on its own it lacks the required fields.
    for (const [file, reading] of Object.entries(readings)) {
      if (reading.as !== "turn/start fragment") continue;
      const fragment = load(file);
      expect(validateParams("turn/start", fragment).ok, file).toBe(false);
      expect(Object.keys(fragment).length, file).toBeGreaterThan(0);
    }
  });
});

interface Variant {
  readonly fixture: string;
  /** Breaks a deep copy of the fixture in place. */
  readonly mutate: (value: any) => void;
  /** Pointer of the issue, into the part that has a schema (see `check`). */
  readonly wantPointer: string;
  readonly wantMessageFragment: string;
  /** An unknown field, which tolerant mode accepts. */
  readonly unknownField?: boolean;
}

const variants: Array<[string, Variant]> = [
  // Wrong enum values.
  [
    "permission mode admin",
    {
      fixture: "turn_start_request.json",
      mutate: (v) => (v.params.permission_profile.mode = "admin"),
      wantPointer: "/permission_profile/mode",
      wantMessageFragment: "must be one of full_access, auto_accept_edits, supervised",
    },
  ],
  [
    "turn status Running",
    {
      fixture: "turn_start_response.json",
      mutate: (v) => (v.turn.status = "Running"),
      wantPointer: "/turn/status",
      wantMessageFragment: "must be one of InProgress, Completed, Failed, Interrupted, Blocked",
    },
  ],
  [
    "permission behavior prompt",
    {
      fixture: "turn_start_response.json",
      mutate: (v) => (v.turn.permission_profile.effective_policy.shell_command = "prompt"),
      wantPointer: "/turn/permission_profile/effective_policy/shell_command",
      wantMessageFragment: "must be one of allow, ask, deny",
    },
  ],
  [
    "disclosure resultReturn everything",
    {
      fixture: "disclosure_policy.json",
      mutate: (v) => (v.resultReturn = "everything"),
      wantPointer: "/resultReturn",
      wantMessageFragment: "must be one of none, summary_only, full_result",
    },
  ],
  [
    "legacy sandbox mode ReadOnly",
    {
      fixture: "turn_start_request.json",
      mutate: (v) => (v.params.sandbox_policy.mode = "ReadOnly"),
      wantPointer: "/sandbox_policy/mode",
      wantMessageFragment: 'must be "FullAccess"',
    },
  ],
  // Resolutions only the gateway may set.
  [
    "cancelled sent as a client resolution",
    {
      fixture: "permission_respond_request.json",
      mutate: (v) => (v.params.resolution = "cancelled"),
      wantPointer: "/resolution",
      wantMessageFragment: "must be one of allow_once, allow_for_turn, deny",
    },
  ],
  [
    "expired sent as a client resolution",
    {
      fixture: "permission_respond_request.json",
      mutate: (v) => (v.params.resolution = "expired"),
      wantPointer: "/resolution",
      wantMessageFragment: "must be one of allow_once, allow_for_turn, deny",
    },
  ],
  // Missing required fields.
  [
    "turn/cancel without turn_id",
    { fixture: "turn_cancel_request.json", mutate: (v) => delete v.params.turn_id, wantPointer: "/turn_id", wantMessageFragment: "is required" },
  ],
  [
    "turn/resume without thread_id",
    { fixture: "turn_resume_request.json", mutate: (v) => delete v.params.thread_id, wantPointer: "/thread_id", wantMessageFragment: "is required" },
  ],
  [
    "turn/work/items/get without workItemIds",
    { fixture: "turn_work_items_get_request.json", mutate: (v) => delete v.params.workItemIds, wantPointer: "/workItemIds", wantMessageFragment: "is required" },
  ],
  [
    "prompt manifest without fingerprint_full",
    { fixture: "prompt_manifest.json", mutate: (v) => delete v.fingerprint_full, wantPointer: "/fingerprint_full", wantMessageFragment: "is required" },
  ],
  [
    "turn/items result without last_sequence",
    { fixture: "turn_items_result.json", mutate: (v) => delete v.last_sequence, wantPointer: "/last_sequence", wantMessageFragment: "is required" },
  ],
  [
    "mention without path",
    { fixture: "user_input_array.json", mutate: (v) => delete v[5].path, wantPointer: "/5/path", wantMessageFragment: "is required" },
  ],
  [
    "cliAgentRuntime backend without runtime_id",
    {
      fixture: "execution_backend_cli_runtime.json",
      mutate: (v) => delete v.execution_backend.runtime_id,
      wantPointer: "/execution_backend/runtime_id",
      wantMessageFragment: "is required",
    },
  ],
  // Unknown extra fields.
  [
    "an unknown turn/start param",
    {
      fixture: "turn_start_request.json",
      mutate: (v) => (v.params.priority = "high"),
      wantPointer: "/priority",
      wantMessageFragment: "is not a known field",
      unknownField: true,
    },
  ],
  [
    "an unknown field in an MCP server capability",
    {
      fixture: "capabilities_array.json",
      mutate: (v) => (v[1].kind.transport = "stdio"),
      wantPointer: "/1/kind/transport",
      wantMessageFragment: "is not a known field",
      unknownField: true,
    },
  ],
  [
    "an unknown CLI runtime option",
    {
      fixture: "execution_backend_cli_runtime.json",
      mutate: (v) => (v.cli_runtime_options.verbosity = "loud"),
      wantPointer: "/cli_runtime_options/verbosity",
      wantMessageFragment: "is not a known field",
      unknownField: true,
    },
  ],
  [
    "an unknown field in a newest anchor",
    {
      fixture: "turn_work_page_request.json",
      mutate: (v) => (v.params.anchor.cursor = "cur_0001"),
      wantPointer: "/anchor/cursor",
      wantMessageFragment: "is not a known field",
      unknownField: true,
    },
  ],
  // Wrong types.
  [
    "limit as a string",
    { fixture: "turn_work_page_request.json", mutate: (v) => (v.params.limit = "100"), wantPointer: "/limit", wantMessageFragment: "must be integer" },
  ],
  [
    "events as an object",
    { fixture: "turn_items_result.json", mutate: (v) => (v.events = {}), wantPointer: "/events", wantMessageFragment: "must be array" },
  ],
  [
    "disclosure text as a string",
    { fixture: "disclosure_policy.json", mutate: (v) => (v.text = "yes"), wantPointer: "/text", wantMessageFragment: "must be boolean" },
  ],
  [
    "steer_if_active as a string",
    {
      fixture: "execution_backend_cli_runtime.json",
      mutate: (v) => (v.cli_runtime_options.steer_if_active = "true"),
      wantPointer: "/cli_runtime_options/steer_if_active",
      wantMessageFragment: "must be boolean",
    },
  ],
  [
    "a work item id as a number",
    { fixture: "turn_work_items_get_request.json", mutate: (v) => (v.params.workItemIds[0] = 1), wantPointer: "/workItemIds/0", wantMessageFragment: "must be string" },
  ],
  // Wrong union tags: the message lists the tags the union allows.
  [
    "a user input of type txt",
    {
      fixture: "user_input_array.json",
      mutate: (v) => (v[0].type = "txt"),
      wantPointer: "/0/type",
      wantMessageFragment: "must be one of text, localFile, localImage, image, artifact, mention, file, audio, video",
    },
  ],
  [
    "a turn/start input of type txt",
    {
      fixture: "turn_start_request.json",
      mutate: (v) => (v.params.input[0].type = "txt"),
      wantPointer: "/input/0/type",
      wantMessageFragment: "must be one of text, localFile, localImage, image, artifact, mention, file, audio, video",
    },
  ],
  [
    "a capability kind of type plugin",
    {
      fixture: "capabilities_array.json",
      mutate: (v) => (v[0].kind.type = "plugin"),
      wantPointer: "/0/kind/type",
      wantMessageFragment: "must be one of skill, mcpServer, mcpTool",
    },
  ],
  [
    "an execution backend of type openai",
    {
      fixture: "execution_backend_api_provider.json",
      mutate: (v) => (v.execution_backend.type = "openai"),
      wantPointer: "/execution_backend/type",
      wantMessageFragment: "must be one of apiProvider, cliAgentRuntime, acpAgentRuntime",
    },
  ],
  [
    "a work page anchor of kind latest",
    {
      fixture: "turn_work_page_request.json",
      mutate: (v) => (v.params.anchor.kind = "latest"),
      wantPointer: "/anchor/kind",
      wantMessageFragment: "must be one of newest, oldest, before, after",
    },
  ],
];

function broken(variant: Variant): unknown {
  const value = structuredClone(load(variant.fixture));
  variant.mutate(value);
  return value;
}

describe("broken variants of the reference fixtures", () => {
  it("every variant names a fixture that has a reading", () => {
    for (const [name, { fixture }] of variants) expect(readings[fixture], name).toBeDefined();
  });

  it.each(variants)("%s is rejected at its pointer", (_name, variant) => {
    const issues = check(variant.fixture, broken(variant));
    expect(issues).toHaveLength(1);
    expect(issues[0]!.pointer).toBe(variant.wantPointer);
    expect(issues[0]!.message).toContain(variant.wantMessageFragment);
  });

  it.each(variants)("%s: tolerant mode accepts it only if it is an unknown field", (_name, variant) => {
    const issues = check(variant.fixture, broken(variant), "tolerant");
    if (variant.unknownField) {
      expect(issues).toEqual([]);
    } else {
      expect(issues.map((i) => i.pointer)).toEqual([variant.wantPointer]);
      expect(issues[0]!.message).toContain(variant.wantMessageFragment);
    }
  });
});

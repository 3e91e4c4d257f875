/**
 * Message cases and ordering transcripts: each method's request and response, each
 * notification, each registered error, valid and not; envelopes JSON-RPC 2.0 refuses; and
 * for each ordering rule a transcript that keeps it and one that breaks it.
 */
import type { Direction, Json, JsonObject, ProtocolModel } from "../model.js";
import { jsonText } from "./text.js";
import { ValueBuilder } from "./values.js";

export interface MessageCandidate {
  readonly id: string;
  readonly frames: readonly string[];
  readonly note: string;
}

export interface TranscriptCandidate {
  readonly id: string;
  readonly rule: string;
  readonly frames: readonly { readonly from: "client_to_server" | "server_to_client"; readonly json: string }[];
  readonly note: string;
}

/** A request's frame; params left undefined are left out, as a message without params is sent. */
const request = (id: number, method: string, params: Json | undefined) =>
  jsonText(params === undefined ? { jsonrpc: "2.0", id, method } : { jsonrpc: "2.0", id, method, params });
const notification = (method: string, params: Json | undefined) =>
  jsonText(params === undefined ? { jsonrpc: "2.0", method } : { jsonrpc: "2.0", method, params });

/** Who sends a message in a transcript: a message either side may send is sent by `usual`. */
const senderOf = (direction: Direction | undefined, usual: "client_to_server" | "server_to_client") =>
  direction === undefined || direction === "both" ? usual : direction;
const response = (id: number, result: Json) => jsonText({ jsonrpc: "2.0", id, result });

/**
 * The message candidates. `invalidText(type)` is the JSON text of a value the type refuses in
 * strict mode (taken from the type's own cases), or undefined when there is none.
 */
export function messageCandidates(model: ProtocolModel, invalidText: (type: string) => string | undefined): MessageCandidate[] {
  const builder = new ValueBuilder(model);
  /** The smallest value of a type; none when a message has no params. */
  const minimal = (title: string | undefined): Json | undefined =>
    title === undefined
      ? undefined
      : builder.build(
          model.types.find((t) => t.title === title)!,
          "minimal",
        ).value;
  const out: MessageCandidate[] = [];
  const splice = (frame: string, member: string, text: string) => frame.replace(`"${member}":${jsonText(null)}`, `"${member}":${text}`);
  for (const method of model.methods) {
    const params = minimal(method.params);
    out.push({
      id: `request/${method.name}`,
      frames: [request(1, method.name, params)],
      note: `a ${method.name} request with the smallest params`,
    });
    const badParams = method.params === undefined ? undefined : invalidText(method.params);
    if (badParams !== undefined)
      out.push({
        id: `request/${method.name}/invalid-params`,
        frames: [splice(request(1, method.name, null), "params", badParams)],
        note: `a ${method.name} request whose params its schema refuses`,
      });
    out.push({
      id: `response/${method.name}`,
      frames: [request(1, method.name, params), response(1, minimal(method.result) ?? null)],
      note: `a ${method.name} request and its result`,
    });
    const badResult = invalidText(method.result);
    if (badResult !== undefined)
      out.push({
        id: `response/${method.name}/invalid-result`,
        frames: [request(1, method.name, params), splice(response(1, null), "result", badResult)],
        note: `a ${method.name} result its schema refuses`,
      });
    for (const reason of method.errors) {
      const error = model.errors.find((e) => e.reason === reason);
      if (!error) continue;
      out.push({
        id: `error/${method.name}/${reason}`,
        frames: [
          request(1, method.name, params),
          jsonText({
            jsonrpc: "2.0",
            id: 1,
            error: {
              code: error.code,
              message: error.message,
              data: error.data === undefined ? { reason } : (minimal(error.data) ?? null),
            },
          }),
        ],
        note: `the registered error ${reason} answering ${method.name}`,
      });
      // Typed data: the error's own type, else the one the method gives every error it answers with.
      const dataType = error.data ?? method.errorData;
      const errorFrame = (data: string | undefined) =>
        data === undefined
          ? jsonText({ jsonrpc: "2.0", id: 1, error: { code: error.code, message: error.message } })
          : splice(jsonText({ jsonrpc: "2.0", id: 1, error: { code: error.code, message: error.message, data: null } }), "data", data);
      const badData = dataType === undefined ? undefined : invalidText(dataType);
      if (badData !== undefined)
        out.push({
          id: `error/${method.name}/${reason}/invalid-data`,
          frames: [request(1, method.name, params), errorFrame(badData)],
          note: `the registered error ${reason} answering ${method.name}, with data its type ${dataType} refuses`,
        });
      if (error.data !== undefined)
        out.push({
          id: `error/${method.name}/${reason}/missing-data`,
          frames: [request(1, method.name, params), errorFrame(undefined)],
          note: `the registered error ${reason} answering ${method.name} without the data of type ${error.data} it carries`,
        });
    }
  }
  for (const n of model.notifications) {
    out.push({
      id: `notification/${n.name}`,
      frames: [notification(n.name, minimal(n.params))],
      note: `a ${n.name} notification with the smallest params`,
    });
    const bad = n.params === undefined ? undefined : invalidText(n.params);
    if (bad !== undefined)
      out.push({
        id: `notification/${n.name}/invalid-params`,
        frames: [splice(notification(n.name, null), "params", bad)],
        note: `a ${n.name} notification whose params its schema refuses`,
      });
  }
  const first = model.methods[0];
  const envelope = (id: string, frames: string[], note: string) => out.push({ id: `envelope/${id}`, frames, note });
  envelope("unknown-method", [request(1, "x/not_a_method", {})], "a request for a method the protocol does not have");
  envelope("unknown-notification", [notification("x/not_a_notification", {})], "a notification the protocol does not have");
  envelope("not-an-object", ["[1,2]"], "an array of numbers is no message");
  envelope("empty-batch", ["[]"], "an empty batch");
  envelope("wrong-version", [jsonText({ jsonrpc: "1.0", id: 1, method: first?.name ?? "x", params: {} })], 'jsonrpc must be "2.0"');
  envelope(
    "null-request-id",
    [jsonText({ jsonrpc: "2.0", id: null, method: first?.name ?? "x", params: {} })],
    "a request id must not be null",
  );
  envelope(
    "unknown-member",
    [
      jsonText({
        jsonrpc: "2.0",
        id: 1,
        method: first?.name ?? "x",
        params: (first ? minimal(first.params) : undefined) ?? {},
        extra: true,
      }),
    ],
    "a member JSON-RPC 2.0 does not define",
  );
  envelope("response-to-nothing", [response(99, {})], "a response to no request seen");
  envelope(
    "unregistered-error",
    [jsonText({ jsonrpc: "2.0", id: null, error: { code: -32099, message: "not registered" } })],
    "an error code in the server range that the registry does not have",
  );
  envelope(
    "application-error",
    [jsonText({ jsonrpc: "2.0", id: null, error: { code: 17, message: "an application's own code" } })],
    "an error code outside the reserved range",
  );
  return out;
}

/** Sets the value at `pointer`, making the objects on the way. */
function setDeep(root: JsonObject, pointer: string, value: Json): JsonObject {
  const copy = structuredClone(root);
  const tokens = pointer
    .slice(1)
    .split("/")
    .map((t) => t.replace(/~1/g, "/").replace(/~0/g, "~"));
  let node: JsonObject = copy;
  for (const token of tokens.slice(0, -1)) {
    const next = node[token];
    node = (node[token] = next !== null && typeof next === "object" && !Array.isArray(next) ? next : {}) as JsonObject;
  }
  node[tokens.at(-1)!] = value;
  return copy;
}

/** For each ordering rule, a transcript that keeps it and one (or more) that break it. */
export function transcriptCandidates(model: ProtocolModel): TranscriptCandidate[] {
  const builder = new ValueBuilder(model);
  const byName = new Map(model.notifications.map((n) => [n.name, n]));
  const methods = new Map(model.methods.map((m) => [m.name, m]));
  const out: TranscriptCandidate[] = [];
  for (const ordering of model.ordering) {
    const rule = ordering.rule;
    const scope = (rule.scope as { pointer: string }[]) ?? [];
    const scoped = (params: Json, extra: Record<string, Json> = {}): JsonObject => {
      let value: JsonObject = params !== null && typeof params === "object" && !Array.isArray(params) ? params : {};
      for (const part of scope) value = setDeep(value, part.pointer, "s1");
      for (const [pointer, v] of Object.entries(extra)) value = setDeep(value, pointer, v);
      return value;
    };
    const note = (name: string, extra: Record<string, Json> = {}) => {
      const n = byName.get(name);
      const params = n?.params
        ? builder.build(
            model.types.find((t) => t.title === n.params)!,
            "minimal",
          ).value
        : {};
      return { from: senderOf(n?.direction, "server_to_client"), json: notification(name, scoped(params, extra)) } as const;
    };
    const call = (id: number, name: string) => {
      const m = methods.get(name);
      const params = m?.params
        ? builder.build(
            model.types.find((t) => t.title === m.params)!,
            "minimal",
          ).value
        : {};
      return { from: senderOf(m?.direction, "client_to_server"), json: request(id, name, scoped(params)) } as const;
    };
    const answer = (id: number, name: string) => {
      const m = methods.get(name);
      const result = m
        ? builder.build(
            model.types.find((t) => t.title === m.result)!,
            "minimal",
          ).value
        : {};
      return {
        from: senderOf(m?.direction, "client_to_server") === "server_to_client" ? "client_to_server" : "server_to_client",
        json: response(id, result),
      } as const;
    };
    const add = (what: string, frames: TranscriptCandidate["frames"], text: string) =>
      out.push({ id: `${ordering.id}/${what}`, rule: ordering.id, frames, note: text });
    const list = (key: string) => (rule[key] as string[] | undefined) ?? [];
    switch (rule.kind) {
      case "precedes": {
        const then = list("then").find((n) => n !== rule.first);
        if (!then) break;
        add("kept", [note(rule.first as string), note(then)], `${rule.first} before ${then}`);
        add("broken", [note(then), note(rule.first as string)], `${then} before ${rule.first}`);
        break;
      }
      case "leads": {
        const before = list("before")[0];
        if (before) add("broken/late", [note(before), note(rule.notification as string)], `${rule.notification} after ${before}`);
        add("broken/twice", [note(rule.notification as string), note(rule.notification as string)], `${rule.notification} twice`);
        add("kept", [note(rule.notification as string), ...(before ? [note(before)] : [])], `${rule.notification} first`);
        break;
      }
      case "trails": {
        const after = list("after")[0];
        if (after) add("broken/early", [note(rule.notification as string), note(after)], `${after} after ${rule.notification}`);
        add("broken/twice", [note(rule.notification as string), note(rule.notification as string)], `${rule.notification} twice`);
        add("kept", [...(after ? [note(after)] : []), note(rule.notification as string)], `${rule.notification} last`);
        break;
      }
      case "single_terminal": {
        const [a, b] = list("terminals");
        const after = list("after").find((n) => !list("terminals").includes(n));
        if (!a) break;
        add("kept", [note(a)], `one ${a}`);
        add("broken/two-terminals", [note(a), note(b ?? a)], `${a} then ${b ?? a}`);
        if (after) add("broken/after-terminal", [note(a), note(after)], `${after} after ${a}`);
        break;
      }
      case "quiet_after": {
        const quiet = list("quiet").find((n) => n !== rule.notification);
        const until = list("until")[0];
        if (!quiet) break;
        add("broken", [note(rule.notification as string), note(quiet)], `${quiet} after ${rule.notification}`);
        if (until)
          add(
            "kept",
            [note(rule.notification as string), call(1, until), answer(1, until), note(quiet)],
            `${quiet} after ${until} succeeded`,
          );
        break;
      }
      case "paired": {
        const open = rule.open as { notification: string; key: string };
        const close = rule.close as { notification: string; key: string };
        const opened = (key: Json) => note(open.notification, { [open.key]: key });
        const closed = (key: Json) => note(close.notification, { [close.key]: key });
        add("kept", [opened("k1"), closed("k1")], `${open.notification} then ${close.notification} with the same key`);
        add("broken/close-without-open", [closed("k1")], `${close.notification} with no ${open.notification}`);
        add("broken/closed-twice", [opened("k1"), closed("k1"), closed("k1")], `${close.notification} twice`);
        add("broken/never-closed", [opened("k1")], `${open.notification} never closed`);
        break;
      }
      case "sequence": {
        const [name] = list("notifications");
        const field = rule.field as string;
        if (!name) break;
        add("kept", [note(name, { [field]: 1 }), note(name, { [field]: 2 })], `${field} 1 then 2`);
        add("broken/gap", [note(name, { [field]: 1 }), note(name, { [field]: 3 })], `${field} 1 then 3`);
        add("broken/repeat", [note(name, { [field]: 1 }), note(name, { [field]: 1 })], `${field} 1 twice`);
        break;
      }
    }
  }
  return out;
}

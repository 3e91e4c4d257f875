/**
 * The engine behind a generated ordering checker. A protocol declares its ordering rules
 * as data (the `ordering` section of protocol.json); the generator turns them into a typed
 * constant, and this module enforces such rules on a stream of JSON-RPC frames seen from
 * one end of a connection. The rule kinds know nothing of turns or items: each reads the
 * values that identify its scope from params by JSON pointer.
 *
 * - `precedes`: within a scope, `first` comes before every notification of `then`.
 * - `leads`: within a scope, `notification` comes at most once, and before every
 *   notification of `before` (a scope without it is fine).
 * - `trails`: within a scope, `notification` comes at most once, and when it comes, no
 *   notification of `after` follows it (a scope without it is fine).
 * - `single_terminal`: a scope ends with exactly one of `terminals`; nothing of `after`
 *   follows it; a scope still open at the end of the stream is reported.
 * - `quiet_after`: after `notification`, nothing of `quiet` until a request of `until`
 *   for the same scope gets a successful response.
 * - `paired`: every `open` is followed by exactly one `close` with the same key.
 * - `sequence`: `field` of the scope's notifications, and of the items of each listed
 *   method result, goes up by exactly one each time.
 */
import { classify, type JsonRpcId } from "./envelope.js";
import { valueAt } from "./validation.js";

export type FrameDirection = "server_to_client" | "client_to_server";

/** One value that identifies a scope: what it names in messages, and where params hold it. */
export interface OrderingKeyPart {
  readonly name: string;
  /** JSON pointer into params (or, for a method, into its request params). */
  readonly pointer: string;
}

interface RuleBase {
  readonly id: string;
  readonly requirement: string;
  readonly description: string;
  /** The values that identify a scope, outermost first. */
  readonly scope: readonly OrderingKeyPart[];
}

export interface PrecedesRule<N extends string = string> extends RuleBase {
  readonly kind: "precedes";
  readonly first: N;
  readonly then: readonly N[];
}

export interface LeadsRule<N extends string = string> extends RuleBase {
  readonly kind: "leads";
  readonly notification: N;
  readonly before: readonly N[];
}

export interface TrailsRule<N extends string = string> extends RuleBase {
  readonly kind: "trails";
  readonly notification: N;
  /** The notifications that may not follow it in its scope. */
  readonly after: readonly N[];
}

export interface SingleTerminalRule<N extends string = string> extends RuleBase {
  readonly kind: "single_terminal";
  readonly terminals: readonly N[];
  /** The notifications that belong to the scope and may not follow its terminal. */
  readonly after: readonly N[];
}

export interface QuietAfterRule<N extends string = string, M extends string = string> extends RuleBase {
  readonly kind: "quiet_after";
  readonly notification: N;
  readonly quiet: readonly N[];
  /** Requests whose successful response, for the same scope, ends the quiet. */
  readonly until: readonly M[];
}

export interface PairedRule<N extends string = string> extends RuleBase {
  readonly kind: "paired";
  /** What the key names in messages, e.g. "request". */
  readonly subject: string;
  readonly open: { readonly notification: N; readonly key: string };
  readonly close: { readonly notification: N; readonly key: string };
}

export interface SequenceRule<N extends string = string, M extends string = string> extends RuleBase {
  readonly kind: "sequence";
  readonly field: string;
  readonly notifications: readonly N[];
  /** Method results holding an array (at `items`) whose elements carry `field`. */
  readonly results: readonly { readonly method: M; readonly items: string }[];
}

export type OrderingRule<N extends string = string, M extends string = string> =
  PrecedesRule<N> | LeadsRule<N> | TrailsRule<N> | SingleTerminalRule<N> | QuietAfterRule<N, M> | PairedRule<N> | SequenceRule<N, M>;

export interface OrderingViolation {
  rule: string;
  requirement: string;
  message: string;
  frameIndex: number;
  frame: unknown;
}

export interface OrderingEndOptions {
  /** Do not report scopes that have not reached their terminal yet (turns still running), nor what is still open inside them. */
  readonly openTurnsAllowed?: boolean;
}

export interface OrderingChecker {
  /** Feed one JSON-RPC frame (parsed object) in the order seen; `direction` is who sent it. Returns new violations. */
  accept(frame: unknown, direction: FrameDirection): OrderingViolation[];
  /** End of stream: returns violations only detectable at the end (e.g. a turn with no terminal, an unresolved request). Pass { openTurnsAllowed: true } to not report turns still running. */
  end(options?: OrderingEndOptions): OrderingViolation[];
  readonly violations: readonly OrderingViolation[];
}

/** A frame as the rules see it: where it was in the stream. */
interface At {
  readonly index: number;
  readonly frame: unknown;
}

interface Scope {
  readonly key: string;
  /** E.g. `item "i3" of turn "t1" of thread "th1"`. */
  readonly label: string;
}

type Report = (message: string, at: At) => void;

/** What a rule does with each kind of message; every hook is optional. */
interface RuleCheck {
  notification?(method: string, params: unknown, at: At): void;
  request?(method: string, params: unknown, id: string): void;
  response?(request: { method: string; params: unknown }, id: string, ok: boolean, result: unknown, at: At): void;
  end?(open: (scope: readonly OrderingKeyPart[], key: string) => boolean): void;
}

const quote = (value: unknown) => JSON.stringify(value);

/** The scope a message belongs to, or undefined when params do not carry every key part. */
function scopeOf(parts: readonly OrderingKeyPart[], params: unknown): Scope | undefined {
  const values: (string | number)[] = [];
  for (const part of parts) {
    const value = valueAt(params, part.pointer);
    if (typeof value !== "string" && typeof value !== "number") return undefined;
    values.push(value);
  }
  const label = parts
    .map((part, i) => `${part.name} ${quote(values[i])}`)
    .reverse()
    .join(" of ");
  return { key: JSON.stringify(values), label };
}

const scopeId = (parts: readonly OrderingKeyPart[]) => JSON.stringify(parts.map((p) => p.pointer));

function precedes(rule: PrecedesRule, report: Report): RuleCheck {
  const then = new Set(rule.then);
  const opened = new Set<string>();
  return {
    notification(method, params, at) {
      const scope = scopeOf(rule.scope, params);
      if (!scope) return;
      if (method === rule.first) opened.add(scope.key);
      else if (then.has(method) && !opened.has(scope.key))
        report(`${method} for ${scope.label} at frame ${at.index} came before its ${rule.first}`, at);
    },
  };
}

function leads(rule: LeadsRule, report: Report): RuleCheck {
  const before = new Set(rule.before);
  const led = new Map<string, At>();
  const followed = new Map<string, { method: string; at: At }>();
  return {
    notification(method, params, at) {
      if (method !== rule.notification && !before.has(method)) return;
      const scope = scopeOf(rule.scope, params);
      if (!scope) return;
      if (method !== rule.notification) {
        if (!followed.has(scope.key)) followed.set(scope.key, { method, at });
        return;
      }
      const earlier = led.get(scope.key);
      const other = followed.get(scope.key);
      if (earlier)
        report(`${method} for ${scope.label} at frame ${at.index} is a second one: it already came at frame ${earlier.index}`, at);
      else if (other)
        report(
          `${method} for ${scope.label} at frame ${at.index} came after ${other.method} at frame ${other.at.index}; it must come first`,
          at,
        );
      if (!earlier) led.set(scope.key, at);
    },
  };
}

function trails(rule: TrailsRule, report: Report): RuleCheck {
  const after = new Set(rule.after);
  const trailed = new Map<string, At>();
  /** Scopes already reported for a notification of `after` following it: one finding per scope. */
  const overtaken = new Set<string>();
  return {
    notification(method, params, at) {
      if (method !== rule.notification && !after.has(method)) return;
      const scope = scopeOf(rule.scope, params);
      if (!scope) return;
      const earlier = trailed.get(scope.key);
      if (method !== rule.notification) {
        if (earlier && !overtaken.has(scope.key)) {
          overtaken.add(scope.key);
          report(
            `${method} for ${scope.label} at frame ${at.index} came after ${rule.notification} at frame ${earlier.index}; ${rule.notification} must come after it`,
            at,
          );
        }
        return;
      }
      if (earlier)
        report(`${method} for ${scope.label} at frame ${at.index} is a second one: it already came at frame ${earlier.index}`, at);
      else trailed.set(scope.key, at);
    },
  };
}

/** Tracks which scopes of a single_terminal rule have ended; shared so that `end` can tell open scopes from closed ones. */
type Terminated = Map<string, Set<string>>;

function singleTerminal(rule: SingleTerminalRule, report: Report, terminated: Terminated): RuleCheck {
  const terminals = new Set(rule.terminals);
  const after = new Set(rule.after);
  const seen = new Map<string, { label: string; at: At }>();
  const ended = new Map<string, { method: string; at: At }>();
  const ids = terminated.get(scopeId(rule.scope)) ?? new Set<string>();
  terminated.set(scopeId(rule.scope), ids);
  return {
    notification(method, params, at) {
      if (!terminals.has(method) && !after.has(method)) return;
      const scope = scopeOf(rule.scope, params);
      if (!scope) return;
      if (!seen.has(scope.key)) seen.set(scope.key, { label: scope.label, at });
      const end = ended.get(scope.key);
      if (end && terminals.has(method)) {
        report(
          `${method} for ${scope.label} at frame ${at.index} is a second terminal notification: ${end.method} at frame ${end.at.index} already ended it`,
          at,
        );
      } else if (end) {
        report(`${method} for ${scope.label} at frame ${at.index} came after ${end.method} at frame ${end.at.index} had ended it`, at);
      } else if (terminals.has(method)) {
        ended.set(scope.key, { method, at });
        ids.add(scope.key);
      }
    },
    end(open) {
      for (const [key, { label, at }] of seen) {
        if (ended.has(key) || open(rule.scope, key)) continue;
        report(
          `${label}, first seen at frame ${at.index}, has no terminal notification (${rule.terminals.join(" or ")}) by the end of the stream`,
          at,
        );
      }
    },
  };
}

function quietAfter(rule: QuietAfterRule, report: Report): RuleCheck {
  const quiet = new Set(rule.quiet);
  const until = new Set(rule.until);
  interface Quiet {
    readonly since: At;
    /** Ids of `until` requests sent for this scope and not answered yet. */
    readonly pending: Set<string>;
    /** Notifications seen while a request was pending: fine if it succeeds, violations if not. */
    held: { method: string; label: string; at: At }[];
  }
  const quieted = new Map<string, Quiet>();
  const message = (method: string, label: string, at: At, since: At) =>
    `${method} for ${label} at frame ${at.index} came after ${rule.notification} at frame ${since.index} and before a successful ${rule.until.join(" or ")}`;
  const release = (state: Quiet) => {
    for (const held of state.held) report(message(held.method, held.label, held.at, state.since), held.at);
    state.held = [];
  };
  return {
    notification(method, params, at) {
      const scope = scopeOf(rule.scope, params);
      if (!scope) return;
      const state = quieted.get(scope.key);
      if (state && quiet.has(method)) {
        if (state.pending.size) state.held.push({ method, label: scope.label, at });
        else report(message(method, scope.label, at, state.since), at);
      }
      if (method === rule.notification && !state) quieted.set(scope.key, { since: at, pending: new Set(), held: [] });
    },
    request(method, params, id) {
      if (!until.has(method)) return;
      const scope = scopeOf(rule.scope, params);
      if (scope) quieted.get(scope.key)?.pending.add(id);
    },
    response(request, id, ok) {
      if (!until.has(request.method)) return;
      const scope = scopeOf(rule.scope, request.params);
      const state = scope && quieted.get(scope.key);
      if (!scope || !state || !state.pending.delete(id)) return;
      if (ok) {
        quieted.delete(scope.key);
      } else if (!state.pending.size) release(state);
    },
    end() {
      for (const state of quieted.values()) release(state);
    },
  };
}

function paired(rule: PairedRule, report: Report): RuleCheck {
  interface Pair {
    readonly scope: Scope;
    readonly label: string;
    readonly opened: At;
    closed?: At;
  }
  const pairs = new Map<string, Pair>();
  const keyOf = (params: unknown, pointer: string) => {
    const scope = scopeOf(rule.scope, params);
    const value = valueAt(params, pointer);
    if (!scope || (typeof value !== "string" && typeof value !== "number")) return undefined;
    return { scope, key: JSON.stringify([scope.key, value]), label: `${rule.subject} ${quote(value)} of ${scope.label}` };
  };
  return {
    notification(method, params, at) {
      if (method === rule.open.notification) {
        const found = keyOf(params, rule.open.key);
        if (!found) return;
        const pair = pairs.get(found.key);
        if (pair)
          report(`${method} for ${found.label} at frame ${at.index} opened it a second time (first at frame ${pair.opened.index})`, at);
        else pairs.set(found.key, { scope: found.scope, label: found.label, opened: at });
      } else if (method === rule.close.notification) {
        const found = keyOf(params, rule.close.key);
        if (!found) return;
        const pair = pairs.get(found.key);
        if (!pair) report(`${method} for ${found.label} at frame ${at.index} came before its ${rule.open.notification}`, at);
        else if (pair.closed)
          report(`${method} for ${found.label} at frame ${at.index} closed it a second time (first at frame ${pair.closed.index})`, at);
        else pair.closed = at;
      }
    },
    end(open) {
      for (const pair of pairs.values()) {
        if (pair.closed || open(rule.scope, pair.scope.key)) continue;
        report(
          `${pair.label}, opened by ${rule.open.notification} at frame ${pair.opened.index}, never got its ${rule.close.notification}`,
          pair.opened,
        );
      }
    },
  };
}

function sequence(rule: SequenceRule, report: Report): RuleCheck {
  const notifications = new Set(rule.notifications);
  const last = new Map<string, { value: number; at: At }>();
  return {
    notification(method, params, at) {
      if (!notifications.has(method)) return;
      const scope = scopeOf(rule.scope, params);
      const value = valueAt(params, rule.field);
      if (!scope || !Number.isInteger(value)) return;
      const previous = last.get(scope.key);
      if (previous && value !== previous.value + 1) {
        report(
          `${method} for ${scope.label} at frame ${at.index} has ${rule.field} ${String(value)}; expected ${previous.value + 1} after ${previous.value} at frame ${previous.at.index}`,
          at,
        );
      }
      last.set(scope.key, { value: value as number, at });
    },
    response(request, _id, ok, result, at) {
      const source = ok ? rule.results.find((r) => r.method === request.method) : undefined;
      if (!source) return;
      const items = valueAt(result, source.items);
      if (!Array.isArray(items)) return;
      const scope = scopeOf(rule.scope, request.params);
      const whose = scope ? ` for ${scope.label}` : "";
      let previous: number | undefined;
      items.forEach((item, i) => {
        const value = valueAt(item, rule.field);
        if (!Number.isInteger(value)) return;
        if (previous !== undefined && value !== previous + 1) {
          report(
            `${request.method} result${whose} at frame ${at.index}: ${source.items}/${i}${rule.field} is ${String(value)}; expected ${previous + 1} after ${previous}`,
            at,
          );
        }
        previous = value as number;
      });
    },
  };
}

function checkOf(rule: OrderingRule, report: Report, terminated: Terminated): RuleCheck {
  switch (rule.kind) {
    case "precedes":
      return precedes(rule, report);
    case "leads":
      return leads(rule, report);
    case "trails":
      return trails(rule, report);
    case "single_terminal":
      return singleTerminal(rule, report, terminated);
    case "quiet_after":
      return quietAfter(rule, report);
    case "paired":
      return paired(rule, report);
    case "sequence":
      return sequence(rule, report);
  }
}

/** The side that answers what `direction`'s sender sent. */
export const OTHER_SIDE: Record<FrameDirection, FrameDirection> = {
  server_to_client: "client_to_server",
  client_to_server: "server_to_client",
};

/** Builds a checker for a set of rules. Generated code calls this with the protocol's own rules. */
export function createOrderingEngine(rules: readonly OrderingRule[]): OrderingChecker {
  const violations: OrderingViolation[] = [];
  let fresh: OrderingViolation[] = [];
  const terminated: Terminated = new Map();
  const checks = rules.map((rule) =>
    checkOf(
      rule,
      (message, at) => fresh.push({ rule: rule.id, requirement: rule.requirement, message, frameIndex: at.index, frame: at.frame }),
      terminated,
    ),
  );
  /** Requests waiting for their response, by the sender's direction and id. */
  const pending = new Map<string, { method: string; params: unknown }>();
  const pendingKey = (direction: FrameDirection, id: JsonRpcId | null) => `${direction} ${JSON.stringify(id)}`;
  let index = 0;
  let streamEnded = false;

  const take = () => {
    const found = fresh;
    fresh = [];
    violations.push(...found);
    return found;
  };

  const one = (message: unknown, direction: FrameDirection, at: At) => {
    const classified = classify(message);
    if (classified.kind === "notification") {
      for (const check of checks) check.notification?.(classified.message.method, classified.message.params, at);
    } else if (classified.kind === "request") {
      const { id, method, params } = classified.message;
      const key = pendingKey(direction, id);
      pending.set(key, { method, params });
      for (const check of checks) check.request?.(method, params, key);
    } else if (classified.kind === "response") {
      const response = classified.message;
      const key = pendingKey(OTHER_SIDE[direction], response.id);
      const request = pending.get(key);
      if (!request) return;
      pending.delete(key);
      const ok = "result" in response;
      for (const check of checks) check.response?.(request, key, ok, ok ? response.result : undefined, at);
    }
  };

  return {
    get violations() {
      return violations;
    },
    accept(frame, direction) {
      const at = { index: index++, frame };
      for (const message of Array.isArray(frame) ? frame : [frame]) one(message, direction, at);
      return take();
    },
    end(options = {}) {
      // The end of a stream is reported once; a second call finds nothing new.
      if (streamEnded) return [];
      streamEnded = true;
      const open = (scope: readonly OrderingKeyPart[], key: string) =>
        options.openTurnsAllowed === true && !(terminated.get(scopeId(scope))?.has(key) ?? false);
      for (const check of checks) check.end?.(open);
      return take();
    },
  };
}

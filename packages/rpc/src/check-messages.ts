/**
 * Checks a sequence of JSON-RPC messages against the protocol: a request against its
 * method's params, a response against the result of the request with the same id seen
 * earlier (or as a registered error), a notification against its params.
 */
import { classify, type JsonRpcId } from "./envelope.js";
import type { ValidationIssue } from "./validation.js";
import { OTHER_SIDE, type FrameDirection, type OrderingChecker, type OrderingViolation } from "./ordering.js";
import type { ProtocolView, ValidationMode } from "./protocol-view.js";
import { didYouMean } from "./suggest.js";

/** One problem with one message. */
export interface Finding {
  /** Index of the message in the input sequence. */
  readonly index: number;
  /** The method or notification the message is about, when known. */
  readonly method?: string;
  /** Where the pointer starts: "params", "result", "error" or "" for the message itself. */
  readonly part: "params" | "result" | "error" | "";
  readonly issue: ValidationIssue;
}

/**
 * An error whose `data.reason` is a registered reason but whose code is not that reason's:
 * the reason and the code the registry gives it. Undefined for a matching or unregistered reason.
 */
export function codeMismatch(error: { code?: unknown; data?: unknown }, protocol: ProtocolView): { reason: string; expected: number } | undefined {
  const reason = (error.data as { reason?: unknown } | undefined)?.reason;
  if (typeof reason !== "string" || !Object.hasOwn(protocol.errors, reason)) return undefined;
  const expected = protocol.errors[reason]!.code;
  return expected === error.code ? undefined : { reason, expected };
}


/**
 * Stateful: remembers request ids so that later responses can be matched to their method,
 * and, unless told otherwise, checks the protocol's ordering rules across the messages
 * (each message's sender follows from its method's direction, a response's from its request).
 */
export class MessageChecker {
  private readonly requests = new Map<string, string>();
  private readonly ordering: OrderingChecker | undefined;
  private readonly protocol: ProtocolView;
  private readonly registeredByCode: Map<number, string>;
  /** The input index of each message fed to the ordering checker, by the checker's frame index. */
  private readonly fed: number[] = [];
  private lastIndex = 0;

  /** `protocol`: the protocol the messages belong to. */
  constructor(private readonly mode: ValidationMode, options: { readonly ordering?: boolean; readonly protocol: ProtocolView }) {
    this.protocol = options.protocol;
    this.ordering = options.ordering === false ? undefined : this.protocol.createOrderingChecker();
    this.registeredByCode = new Map(Object.entries(this.protocol.errors).map(([reason, e]) => [e.code, reason]));
  }

  private isMethodName(name: string): boolean {
    return Object.hasOwn(this.protocol.methods, name);
  }

  private isNotificationName(name: string): boolean {
    return Object.hasOwn(this.protocol.notifications, name);
  }

  private key(id: JsonRpcId): string {
    return `${typeof id}:${String(id)}`;
  }

  /** Who sent a message, as far as the registry tells; undefined for what it cannot place. */
  private senderOf(message: unknown): FrameDirection | undefined {
    const classified = classify(message);
    if (classified.kind === "request" && this.isMethodName(classified.message.method)) return this.protocol.methods[classified.message.method]!.direction;
    if (classified.kind === "notification" && this.isNotificationName(classified.message.method)) return this.protocol.notifications[classified.message.method]!.direction;
    if (classified.kind === "response" && classified.message.id !== null) {
      const method = this.requests.get(this.key(classified.message.id));
      return method === undefined ? undefined : OTHER_SIDE[this.protocol.methods[method]!.direction];
    }
    return undefined;
  }

  /** Checks one message (or batch) and returns its findings, ordering ones included. */
  check(value: unknown, index: number): Finding[] {
    this.lastIndex = index;
    // The sender is read before the message is checked: a response's request is known by then.
    const sender = Array.isArray(value) ? this.senderOf(value[0]) : this.senderOf(value);
    const findings = this.checkShape(value, index);
    if (this.ordering && sender) {
      this.fed.push(index);
      findings.push(...this.ordering.accept(value, sender).map((v) => this.orderingFinding(v)));
    }
    return findings;
  }

  /** An ordering violation as a finding of the message that broke the rule. */
  private orderingFinding(v: OrderingViolation): Finding {
    return { index: this.fed[v.frameIndex] ?? this.lastIndex, part: "", issue: { pointer: "", message: `breaks ordering rule ${v.rule}: ${v.message}` } };
  }

  /**
   * End of input: the ordering rules that can only be judged at the end (a request never
   * resolved, a second terminal). Turns still running at the end are allowed: a transcript
   * may stop anywhere.
   */
  end(): Finding[] {
    return this.ordering ? this.ordering.end({ openTurnsAllowed: true }).map((v) => this.orderingFinding(v)) : [];
  }

  private checkShape(value: unknown, index: number): Finding[] {
    if (Array.isArray(value)) {
      if (value.length === 0) return [{ index, part: "", issue: { pointer: "", message: "an empty batch is not a valid JSON-RPC message" } }];
      return value.flatMap((message, i) => this.checkOne(message, index).map((f) => ({ ...f, issue: { ...f.issue, pointer: f.part === "" ? `/${i}${f.issue.pointer}` : f.issue.pointer } })));
    }
    return this.checkOne(value, index);
  }

  private checkOne(value: unknown, index: number): Finding[] {
    const classified = classify(value);
    const issuesToFindings = (issues: ValidationIssue[], part: Finding["part"], method?: string): Finding[] =>
      issues.map((issue) => ({ index, part, issue, ...(method === undefined ? {} : { method }) }));
    switch (classified.kind) {
      case "invalid":
        return [{ index, part: "", issue: { pointer: "", message: `not a valid JSON-RPC 2.0 message: ${classified.reason}` } }];
      case "request": {
        const { method, params, id } = classified.message;
        if (!this.isMethodName(method)) {
          const hint = this.isNotificationName(method) ? " (it is a notification: it has no id)" : didYouMean(method, Object.keys(this.protocol.methods));
          return [{ index, method, part: "", issue: { pointer: "/method", message: `is not a method of the protocol${hint}`, received: method } }];
        }
        this.requests.set(this.key(id), method);
        const result = this.protocol.validate(this.protocol.methods[method]!.params, params ?? {}, this.mode);
        return result.ok ? [] : issuesToFindings(result.errors, "params", method);
      }
      case "notification": {
        const { method, params } = classified.message;
        if (!this.isNotificationName(method)) {
          const hint = this.isMethodName(method) ? " (it is a method: a request needs an id)" : didYouMean(method, Object.keys(this.protocol.notifications));
          return [{ index, method, part: "", issue: { pointer: "/method", message: `is not a notification of the protocol${hint}`, received: method } }];
        }
        const result = this.protocol.validate(this.protocol.notifications[method]!.params, params ?? {}, this.mode);
        return result.ok ? [] : issuesToFindings(result.errors, "params", method);
      }
      case "response": {
        const response = classified.message;
        const method = response.id === null ? undefined : this.requests.get(this.key(response.id));
        if ("error" in response) {
          const registered = this.registeredByCode.get(response.error.code);
          const mismatch = codeMismatch(response.error, this.protocol);
          if (mismatch) {
            return issuesToFindings([{ pointer: "/code", message: `does not match the registered code ${mismatch.expected} of reason "${mismatch.reason}"`, received: response.error.code }], "error", method);
          }
          const reason = (response.error.data as { reason?: unknown } | undefined)?.reason;
          if (registered && typeof reason === "string" && reason !== registered && !Object.hasOwn(this.protocol.errors, reason)) {
            const hint = didYouMean(reason, Object.keys(this.protocol.errors), true) || ` (code ${response.error.code} is "${registered}")`;
            return issuesToFindings([{ pointer: "/data/reason", message: `is not an error reason of the protocol${hint}`, received: reason }], "error", method);
          }
          if (!registered && (response.error.code > -32000 || response.error.code < -32768)) return [];
          if (!registered) return issuesToFindings([{ pointer: "/code", message: "is not in the error registry", received: response.error.code }], "error", method);
          if (method && !this.protocol.errors[registered]!.anyMethod && !this.protocol.methods[method]!.errors.includes(registered)) {
            return issuesToFindings([{ pointer: "/code", message: `"${registered}" is not an error ${method} is registered to return`, received: response.error.code }], "error", method);
          }
          return [];
        }
        if (!method) return [{ index, part: "", issue: { pointer: "/id", message: "answers no request seen earlier in the input", received: response.id } }];
        const result = this.protocol.validate(this.protocol.methods[method]!.result, response.result, this.mode);
        return result.ok ? [] : issuesToFindings(result.errors, "result", method);
      }
    }
  }
}

/** Validates a bare value as a named type. */
export function checkBareValue(type: string, value: unknown, index: number, mode: ValidationMode, protocol: ProtocolView): Finding[] {
  const result = protocol.validate(type, value, mode);
  return result.ok ? [] : result.errors.map((issue) => ({ index, part: "", issue, method: type }));
}

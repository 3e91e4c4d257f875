/**
 * Checks a session of JSON-RPC messages against the protocol: a request against its
 * method's params, a response against the result of the request it answers (or as a
 * registered error, with its data), a notification against its params, and each against
 * the side that sent it.
 */
import { classify, type JsonRpcId } from "./envelope.js";
import type { ValidationIssue } from "./validation.js";
import type { FrameDirection, OrderingChecker, OrderingViolation } from "./ordering.js";
import { readParams, sentBy, type MessageDirection, type ParamsEntry } from "./params.js";
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
export function codeMismatch(
  error: { code?: unknown; data?: unknown },
  protocol: ProtocolView,
): { reason: string; expected: number } | undefined {
  const reason = (error.data as { reason?: unknown } | undefined)?.reason;
  if (typeof reason !== "string" || !Object.hasOwn(protocol.errors, reason)) return undefined;
  const expected = protocol.errors[reason]!.code;
  return expected === error.code ? undefined : { reason, expected };
}

/** Who sent a frame. */
export type Sender = "client" | "server";

const OTHER: Record<Sender, Sender> = { client: "server", server: "client" };
const DIRECTION_OF: Record<Sender, FrameDirection> = { client: "client_to_server", server: "server_to_client" };
const SIDE_OF: Record<FrameDirection, Sender> = { client_to_server: "client", server_to_client: "server" };

/** A frame whose sender the checker could not tell (a transcript of bare messages, a message either side may send). */
export interface SenderNote {
  readonly index: number;
  readonly message: string;
}

/**
 * Follows a session: remembers the requests each side sent, by id (both sides number their
 * own requests, so the same id may be waiting on both sides), so that a response is matched
 * to the request of the other side with its id; checks each message against the protocol;
 * and, unless told otherwise, checks the protocol's ordering rules across the messages.
 *
 * The sender of each frame is given (`check(value, index, from)`, from a transcript that
 * records it) or, for bare messages, told from the registry: a request or notification by
 * its method's direction, a response by which side has a request with its id waiting.
 * A frame whose sender cannot be told that way is checked as far as it can be, and noted.
 */
export class MessageChecker {
  /** Requests waiting for their response, by sender and id. */
  private readonly pending = new Map<string, string>();
  private readonly ordering: OrderingChecker | undefined;
  private readonly protocol: ProtocolView;
  private readonly registeredByCode: Map<number, string>;
  /** The input index of each message fed to the ordering checker, by the checker's frame index. */
  private readonly fed: number[] = [];
  private lastIndex = 0;
  /** Frames whose sender could not be told. */
  readonly notes: SenderNote[] = [];

  /** `protocol`: the protocol the messages belong to. */
  constructor(
    private readonly mode: ValidationMode,
    options: { readonly ordering?: boolean; readonly protocol: ProtocolView },
  ) {
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

  private key(sender: Sender, id: JsonRpcId): string {
    return `${sender} ${typeof id}:${String(id)}`;
  }

  /** Who sent a message, from the registry and the requests waiting; undefined with the reason when it cannot be told. */
  private senderOf(message: unknown): Sender | { unknown: string } | undefined {
    const classified = classify(message);
    if (classified.kind === "request" || classified.kind === "notification") {
      const { method } = classified.message;
      const entry =
        classified.kind === "request"
          ? this.isMethodName(method)
            ? this.protocol.methods[method]
            : undefined
          : this.isNotificationName(method)
            ? this.protocol.notifications[method]
            : undefined;
      if (!entry) return undefined;
      if (entry.direction === "both") return { unknown: `${method} may be sent by either side` };
      return SIDE_OF[entry.direction];
    }
    if (classified.kind === "response" && classified.message.id !== null) {
      const id = classified.message.id;
      const waiting = (["client", "server"] as const).filter((side) => this.pending.has(this.key(side, id)));
      if (waiting.length === 2) return { unknown: `both sides have a request with id ${JSON.stringify(id)} waiting` };
      return waiting.length === 1 ? OTHER[waiting[0]!] : undefined;
    }
    return undefined;
  }

  /**
   * Checks one message (or batch) and returns its findings, ordering ones included. `from`
   * is who sent it, when the transcript records it.
   */
  check(value: unknown, index: number, from?: Sender): Finding[] {
    this.lastIndex = index;
    let sender = from;
    if (sender === undefined) {
      // The sender is read before the message is checked: a response's request is known by then.
      const told = this.senderOf(Array.isArray(value) ? value[0] : value);
      if (told !== undefined && typeof told === "object")
        this.notes.push({
          index,
          message: `cannot tell who sent this frame: ${told.unknown}; record the sender ({"from": "client" | "server", "message": …})`,
        });
      else sender = told;
    }
    const findings: Finding[] = [];
    if (Array.isArray(value) && this.protocol.batches === false)
      findings.push({ index, part: "", issue: { pointer: "", message: "is a batch, and the protocol does not allow JSON-RPC batches" } });
    findings.push(...this.checkShape(value, index, sender));
    if (this.ordering && sender) {
      this.fed.push(index);
      findings.push(...this.ordering.accept(value, DIRECTION_OF[sender]).map((v) => this.orderingFinding(v)));
    }
    return findings;
  }

  /** An ordering violation as a finding of the message that broke the rule. */
  private orderingFinding(v: OrderingViolation): Finding {
    return {
      index: this.fed[v.frameIndex] ?? this.lastIndex,
      part: "",
      issue: { pointer: "", message: `breaks ordering rule ${v.rule}: ${v.message}` },
    };
  }

  /**
   * End of input: the ordering rules that can only be judged at the end (a request never
   * resolved, a second terminal). Turns still running at the end are allowed: a transcript
   * may stop anywhere.
   */
  end(): Finding[] {
    return this.ordering ? this.ordering.end({ openTurnsAllowed: true }).map((v) => this.orderingFinding(v)) : [];
  }

  private checkShape(value: unknown, index: number, sender: Sender | undefined): Finding[] {
    if (Array.isArray(value)) {
      if (value.length === 0)
        return [{ index, part: "", issue: { pointer: "", message: "an empty batch is not a valid JSON-RPC message" } }];
      return value.flatMap((message, i) =>
        this.checkOne(message, index, sender).map((f) => ({
          ...f,
          issue: { ...f.issue, pointer: f.part === "" ? `/${i}${f.issue.pointer}` : f.issue.pointer },
        })),
      );
    }
    return this.checkOne(value, index, sender);
  }

  /** A finding when `sender` may not send a message of `direction`. */
  private wrongWay(
    name: string,
    kind: "method" | "notification",
    direction: MessageDirection,
    sender: Sender | undefined,
    index: number,
  ): Finding[] {
    if (sender === undefined || sentBy(direction, sender)) return [];
    return [
      {
        index,
        method: name,
        part: "",
        issue: {
          pointer: "/method",
          message: `is a ${kind} only the ${OTHER[sender]} sends (${direction}); here the ${sender} sent it`,
          received: name,
        },
      },
    ];
  }

  /** The params of a request or notification: their presence and structure, then their schema. */
  private checkParams(entry: ParamsEntry, raw: unknown, index: number, method: string): Finding[] {
    const read = readParams(entry, raw);
    const toFindings = (issues: ValidationIssue[]): Finding[] => issues.map((issue) => ({ index, part: "params", issue, method }));
    if (!read.ok) return toFindings(read.issues);
    if (read.value === undefined || entry.params === undefined) return [];
    const result = this.protocol.validate(entry.params, read.value, this.mode);
    return result.ok ? [] : toFindings(result.errors);
  }

  private checkOne(value: unknown, index: number, sender: Sender | undefined): Finding[] {
    const classified = classify(value);
    const issuesToFindings = (issues: ValidationIssue[], part: Finding["part"], method?: string): Finding[] =>
      issues.map((issue) => ({ index, part, issue, ...(method === undefined ? {} : { method }) }));
    switch (classified.kind) {
      case "invalid":
        return [{ index, part: "", issue: { pointer: "", message: `not a valid JSON-RPC 2.0 message: ${classified.reason}` } }];
      case "request": {
        const { method, params, id } = classified.message;
        if (!this.isMethodName(method)) {
          const hint = this.isNotificationName(method)
            ? " (it is a notification: it has no id)"
            : didYouMean(method, Object.keys(this.protocol.methods));
          return [
            { index, method, part: "", issue: { pointer: "/method", message: `is not a method of the protocol${hint}`, received: method } },
          ];
        }
        const entry = this.protocol.methods[method]!;
        const findings = this.wrongWay(method, "method", entry.direction, sender, index);
        // A request whose sender is not known is remembered for each side that may send it.
        for (const side of sender ? [sender] : (["client", "server"] as const).filter((s) => sentBy(entry.direction, s))) {
          const key = this.key(side, id);
          if (sender && this.pending.has(key))
            findings.push({
              index,
              method,
              part: "",
              issue: {
                pointer: "/id",
                message: `reuses the id of the ${side}'s request ${this.pending.get(key)} that is still waiting for its response`,
                received: id,
              },
            });
          this.pending.set(key, method);
        }
        return [...findings, ...this.checkParams(entry, params, index, method)];
      }
      case "notification": {
        const { method, params } = classified.message;
        if (!this.isNotificationName(method)) {
          const hint = this.isMethodName(method)
            ? " (it is a method: a request needs an id)"
            : didYouMean(method, Object.keys(this.protocol.notifications));
          return [
            {
              index,
              method,
              part: "",
              issue: { pointer: "/method", message: `is not a notification of the protocol${hint}`, received: method },
            },
          ];
        }
        const entry = this.protocol.notifications[method]!;
        return [
          ...this.wrongWay(method, "notification", entry.direction, sender, index),
          ...this.checkParams(entry, params, index, method),
        ];
      }
      case "response": {
        const response = classified.message;
        const requester = sender === undefined ? undefined : OTHER[sender];
        let method: string | undefined;
        if (response.id !== null) {
          const sides = requester
            ? [requester]
            : (["client", "server"] as const).filter((side) => this.pending.has(this.key(side, response.id!)));
          for (const side of sides) {
            const key = this.key(side, response.id);
            method ??= this.pending.get(key);
            this.pending.delete(key);
          }
        }
        if ("error" in response) return this.checkError(response.error, method, index);
        if (!method) {
          const crossed = requester && response.id !== null && this.pending.has(this.key(OTHER[requester], response.id));
          const message = requester
            ? `answers no request the ${requester} sent${crossed ? ` (the ${OTHER[requester]}'s request with this id is waiting, and the ${sender} does not answer its own requests)` : ""}`
            : "answers no request seen earlier in the input";
          return [{ index, part: "", issue: { pointer: "/id", message, received: response.id } }];
        }
        const result = this.protocol.validate(this.protocol.methods[method]!.result, response.result, this.mode);
        return result.ok ? [] : issuesToFindings(result.errors, "result", method);
      }
    }
  }

  private checkError(error: { code: number; message: string; data?: unknown }, method: string | undefined, index: number): Finding[] {
    const issuesToFindings = (issues: ValidationIssue[]): Finding[] =>
      issues.map((issue) => ({ index, part: "error", issue, ...(method === undefined ? {} : { method }) }));
    const registered = this.registeredByCode.get(error.code);
    const mismatch = codeMismatch(error, this.protocol);
    if (mismatch)
      return issuesToFindings([
        {
          pointer: "/code",
          message: `does not match the registered code ${mismatch.expected} of reason "${mismatch.reason}"`,
          received: error.code,
        },
      ]);
    const reason = (error.data as { reason?: unknown } | undefined)?.reason;
    // The error's own data type, else the one the method gives every error it answers with.
    const dataType =
      (registered === undefined ? undefined : this.protocol.errors[registered]!.data) ??
      (method === undefined ? undefined : this.protocol.methods[method]!.errorData);
    if (
      registered &&
      dataType === undefined &&
      typeof reason === "string" &&
      reason !== registered &&
      !Object.hasOwn(this.protocol.errors, reason)
    ) {
      const hint = didYouMean(reason, Object.keys(this.protocol.errors), true) || ` (code ${error.code} is "${registered}")`;
      return issuesToFindings([{ pointer: "/data/reason", message: `is not an error reason of the protocol${hint}`, received: reason }]);
    }
    if (!registered && (error.code > -32000 || error.code < -32768)) return [];
    if (!registered) return issuesToFindings([{ pointer: "/code", message: "is not in the error registry", received: error.code }]);
    const findings: Finding[] = [];
    if (method && !this.protocol.errors[registered]!.anyMethod && !this.protocol.methods[method]!.errors.includes(registered)) {
      findings.push(
        ...issuesToFindings([
          { pointer: "/code", message: `"${registered}" is not an error ${method} is registered to return`, received: error.code },
        ]),
      );
    }
    if (dataType !== undefined) {
      const required = registered !== undefined && this.protocol.errors[registered]!.data !== undefined;
      if (!("data" in error)) {
        if (required)
          findings.push(
            ...issuesToFindings([{ pointer: "/data", message: `is missing: error "${registered}" carries data of type ${dataType}` }]),
          );
      } else {
        const result = this.protocol.validate(dataType, error.data, this.mode);
        if (!result.ok) findings.push(...issuesToFindings(result.errors.map((e) => ({ ...e, pointer: `/data${e.pointer}` }))));
      }
    }
    return findings;
  }
}

/** Validates a bare value as a named type. */
export function checkBareValue(type: string, value: unknown, index: number, mode: ValidationMode, protocol: ProtocolView): Finding[] {
  const result = protocol.validate(type, value, mode);
  return result.ok ? [] : result.errors.map((issue) => ({ index, part: "", issue, method: type }));
}

/**
 * The raw frames of the inspector's connections, both ways, each checked as it passes:
 * against the schemas in strict and in tolerant mode (the generated validators, through the
 * support module's message checker, which matches responses to their requests), and
 * against the protocol's ordering rules (the generated ordering checker, fed each frame
 * with its sender). Each connection is its own JSON-RPC session: responses are matched to
 * the requests of their own connection.
 *
 * The ordering rules speak of a turn's notifications in sequence order, and a reconnect
 * leaves a gap the client fills from turn/items. So the ordering checker reads the turn's
 * stream as the client rebuilds it: the events of each turn/items result count as the
 * notifications they were sent as, a notification whose sequence was already seen (the
 * same event live and caught up) is noted and not judged twice, and the checker of a new
 * connection starts from the turn notifications seen before it, so that a turn begun on
 * an earlier connection is judged as one stream across the drop.
 */
import { MessageChecker, type Finding, type OrderingChecker } from "@turnspec/rpc";
import { createOrderingChecker } from "@turnspec/protocol/ordering";
import { protocolView } from "@turnspec/protocol/view";
import { maskInviteCode, type Transport } from "@turnspec/client/browser";
import { h, json, replace } from "./dom.js";

export type Direction = "sent" | "received";

export interface FrameFinding {
  readonly check: "strict" | "tolerant" | "ordering";
  /** JSON pointer into the message ("" for the message as a whole). */
  readonly pointer: string;
  readonly message: string;
  readonly expected?: unknown;
  readonly received?: unknown;
}

export interface FrameRecord {
  /** 1, 2, 3, … over the whole session. */
  readonly index: number;
  /** Which connection of the session carried it (1 for the first, 2 after a reconnect, …). */
  readonly connection: number;
  readonly direction: Direction;
  readonly at: string;
  readonly text: string;
  /** The parsed message; undefined when the frame is not JSON. */
  readonly value: unknown;
  readonly summary: string;
  readonly findings: FrameFinding[];
  /** Why the client dropped this frame, when it did. */
  dropped?: string;
  /** What the ordering check made of a frame it did not judge (a repeated event). */
  note?: string;
  element?: HTMLDetailsElement;
}

interface Session {
  readonly number: number;
  readonly strict: MessageChecker;
  readonly tolerant: MessageChecker;
  readonly ordering: OrderingChecker;
  /** The record of each frame fed to the ordering checker, by the checker's own frame index (undefined for the frames it started from). */
  readonly fed: (FrameRecord | undefined)[];
  /** Request ids of this connection to their methods, for the summary of a response. */
  readonly methods: Map<string, string>;
}

interface TurnEvent {
  readonly thread_id: string;
  readonly turn_id: string;
  readonly sequence: number;
}

function turnEventOf(params: unknown): TurnEvent | undefined {
  const p = params as Partial<TurnEvent> | undefined;
  return typeof p?.thread_id === "string" && typeof p.turn_id === "string" && typeof p.sequence === "number" ? (p as TurnEvent) : undefined;
}

export class FrameLog {
  readonly records: FrameRecord[] = [];
  private session: Session | undefined;
  private sessions = 0;
  private listeners = new Set<() => void>();
  /** The turn notifications judged so far, in order, each once: where a new connection's checker starts. */
  private readonly turnStream: unknown[] = [];
  /** The last sequence judged of each turn. */
  private readonly lastSequence = new Map<string, number>();

  constructor(private readonly list: HTMLElement) {}

  /** Starts the checks of a new connection. */
  newConnection(): number {
    this.sessions += 1;
    const ordering = createOrderingChecker();
    // Judged already, on the connections before: read again only to know where each turn stands.
    for (const message of this.turnStream) ordering.accept(message, "server_to_client");
    this.session = {
      number: this.sessions,
      strict: new MessageChecker("strict", { ordering: false, protocol: protocolView }),
      tolerant: new MessageChecker("tolerant", { ordering: false, protocol: protocolView }),
      ordering,
      fed: this.turnStream.map(() => undefined),
      methods: new Map(),
    };
    return this.sessions;
  }

  /** The transport with every frame through it recorded. */
  tap(inner: Transport): Transport {
    this.newConnection();
    const outer: Transport = {
      start: () => inner.start(),
      close: () => inner.close(),
      send: (frame) => {
        this.add("sent", frame);
        return inner.send(frame);
      },
    };
    inner.onmessage = (frame) => {
      this.add("received", frame);
      outer.onmessage?.(frame);
    };
    inner.onclose = () => outer.onclose?.();
    inner.onerror = (error) => outer.onerror?.(error);
    return outer;
  }

  /** Notes that the client dropped a received frame (it did not fit the schema it expected). */
  markDropped(frame: string, why: string): void {
    const record = [...this.records].reverse().find((r) => r.direction === "received" && r.text === frame);
    if (!record) return;
    record.dropped = why;
    this.render(record);
  }

  onChange(listener: () => void): void {
    this.listeners.add(listener);
  }

  /**
   * Every frame that is JSON, one per line in the order seen, with who sent it:
   * `{"from": "client" | "server", "message": <frame>}` (the page is the client), the
   * transcript form `turnspec validate` reads.
   */
  exportJsonLines(): { text: string; skipped: number } {
    const parsed = this.records.filter((r) => r.value !== undefined);
    return {
      text: parsed.map((r) => `${JSON.stringify({ from: r.direction === "sent" ? "client" : "server", message: r.value })}\n`).join(""),
      skipped: this.records.length - parsed.length,
    };
  }

  private add(direction: Direction, text: string): void {
    const session = this.session ?? (this.newConnection(), this.session!);
    let value: unknown;
    let parseError: string | undefined;
    try {
      value = JSON.parse(text);
    } catch (error) {
      parseError = (error as Error).message;
    }
    // An invite's code is checked as it came, then shown and exported masked: the record keeps no copy of it.
    const shown = value === undefined ? undefined : maskInviteCode(value);
    const shownText = shown === value ? text : JSON.stringify(shown);
    const index = this.records.length + 1;
    const findings: FrameFinding[] = [];
    if (parseError !== undefined) {
      for (const check of ["strict", "tolerant"] as const) findings.push({ check, pointer: "", message: `not JSON: ${parseError}` });
    } else {
      const from = direction === "sent" ? "client" : "server";
      findings.push(...session.strict.check(value, index, from).map((f) => finding("strict", f)));
      findings.push(...session.tolerant.check(value, index, from).map((f) => finding("tolerant", f)));
    }
    const record: FrameRecord = {
      index,
      connection: session.number,
      direction,
      at: new Date().toISOString().slice(11, 23),
      text: shownText,
      value: shown,
      summary: parseError !== undefined ? "not JSON" : summarize(value, session.methods),
      findings,
    };
    this.records.push(record);
    if (parseError === undefined) this.judgeOrder(session, record, value, direction);
    this.render(record);
    for (const listener of this.listeners) listener();
  }

  /** Feeds the ordering checker (see the file comment) and puts each violation on the frame that broke the rule. */
  private judgeOrder(session: Session, record: FrameRecord, value: unknown, direction: Direction): void {
    const feed = (message: unknown) => {
      session.fed.push(record);
      for (const violation of session.ordering.accept(message, direction === "sent" ? "client_to_server" : "server_to_client")) {
        const broken = session.fed[violation.frameIndex] ?? record;
        broken.findings.push({
          check: "ordering",
          pointer: "",
          message: `breaks ordering rule ${violation.rule} (${violation.requirement}): ${violation.message}`,
        });
        if (broken !== record) this.render(broken);
      }
    };
    const message = value as { id?: unknown; method?: unknown; params?: unknown; result?: unknown };
    const event =
      direction === "received" && typeof message.method === "string" && message.id === undefined ? turnEventOf(message.params) : undefined;
    if (event) {
      const key = `${event.thread_id}/${event.turn_id}`;
      const last = this.lastSequence.get(key) ?? 0;
      if (event.sequence <= last) {
        record.note = `sequence ${event.sequence} of this turn was seen already (up to ${last}): a repeat, not judged again`;
        return;
      }
      this.lastSequence.set(key, event.sequence);
      this.turnStream.push(value);
      feed(value);
      return;
    }
    feed(value);
    // A turn/items result: its events are the turn's notifications the client had not seen.
    const id = message.id === undefined ? undefined : JSON.stringify(message.id);
    if (direction === "received" && message.method === undefined && id !== undefined && session.methods.get(id) === "turn/items") {
      const events = (message.result as { events?: unknown } | undefined)?.events;
      if (!Array.isArray(events)) return;
      for (const e of events as Array<{ method?: unknown; params?: unknown }>) {
        const caught = turnEventOf(e.params);
        if (typeof e.method !== "string" || !caught) continue;
        const key = `${caught.thread_id}/${caught.turn_id}`;
        if (caught.sequence <= (this.lastSequence.get(key) ?? 0)) continue;
        this.lastSequence.set(key, caught.sequence);
        const replayed = { jsonrpc: "2.0", method: e.method, params: e.params };
        this.turnStream.push(replayed);
        feed(replayed);
      }
    }
  }

  private render(record: FrameRecord): void {
    const fresh = !record.element;
    const element = record.element ?? h("details", { class: "frame" });
    record.element = element;
    // A frame's body (the message pretty-printed, its findings) is built when it is opened: a long session holds thousands.
    if (fresh) element.addEventListener("toggle", () => element.open && this.render(record));
    const of = (check: FrameFinding["check"]) => record.findings.filter((f) => f.check === check);
    const strict = of("strict");
    const tolerant = of("tolerant");
    const ordering = of("ordering");
    element.dataset.index = String(record.index);
    element.dataset.direction = record.direction;
    element.dataset.connection = String(record.connection);
    element.dataset.strict = strict.length ? "invalid" : "valid";
    element.dataset.tolerant = tolerant.length ? "invalid" : "valid";
    element.dataset.ordering = ordering.length ? "violated" : "ok";
    element.classList.toggle("has-findings", record.findings.length > 0 || record.dropped !== undefined);
    const open = element.open;
    replace(
      element,
      h(
        "summary",
        {},
        h("span", { class: "frame-index" }, `#${record.index}`),
        " ",
        h("span", { class: `direction ${record.direction}` }, record.direction === "sent" ? "→ sent" : "← received"),
        " ",
        h("span", { class: "frame-summary" }, record.summary),
        " ",
        badge("strict", strict.length),
        badge("tolerant", tolerant.length),
        h(
          "span",
          { class: `badge ${ordering.length ? "bad" : "good"}` },
          ordering.length ? `ordering: ${ordering.length} violation${ordering.length === 1 ? "" : "s"}` : "ordering: ok",
        ),
        record.dropped !== undefined ? h("span", { class: "badge bad" }, "dropped by the client") : null,
      ),
      ...(element.open ? this.body(record) : []),
    );
    element.open = open;
    if (fresh) this.list.appendChild(element);
  }

  private body(record: FrameRecord): HTMLElement[] {
    const parts: Array<HTMLElement | null> = [
      h("p", { class: "frame-meta" }, `connection ${record.connection} · ${record.at}`),
      record.note !== undefined ? h("p", { class: "frame-meta" }, `Ordering: ${record.note}`) : null,
      record.findings.length
        ? h(
            "ul",
            { class: "findings" },
            ...record.findings.map((f) =>
              h(
                "li",
                { class: "finding" },
                h("strong", {}, `${f.check}: `),
                h("code", { class: "pointer" }, f.pointer === "" ? "(the message)" : f.pointer),
                ` ${f.message}`,
                f.expected !== undefined ? h("span", { class: "expected" }, ` · expected ${JSON.stringify(f.expected)}`) : null,
                f.received !== undefined ? h("span", { class: "received" }, ` · received ${JSON.stringify(f.received)}`) : null,
              ),
            ),
          )
        : null,
      record.dropped !== undefined ? h("p", { class: "finding" }, `The client dropped this frame: ${record.dropped}`) : null,
      record.value !== undefined ? json(record.value) : h("pre", { class: "json" }, record.text),
    ];
    return parts.filter((e): e is HTMLElement => e !== null);
  }
}

function badge(check: string, count: number): HTMLElement {
  return h(
    "span",
    { class: `badge ${count ? "bad" : "good"}` },
    count ? `${check}: ${count} finding${count === 1 ? "" : "s"}` : `${check}: valid`,
  );
}

function finding(check: "strict" | "tolerant", f: Finding): FrameFinding {
  const pointer = f.part === "" ? f.issue.pointer : `/${f.part}${f.issue.pointer}`;
  return {
    check,
    pointer,
    message: f.issue.message,
    ...(f.issue.expected === undefined ? {} : { expected: f.issue.expected }),
    ...(f.issue.received === undefined ? {} : { received: f.issue.received }),
  };
}

/** One line about a message: its method, and for a response the method it answers. */
function summarize(value: unknown, methods: Map<string, string>): string {
  const one = (m: unknown): string => {
    if (typeof m !== "object" || m === null) return "not a JSON-RPC message";
    const message = m as { id?: unknown; method?: unknown; error?: { code?: unknown; message?: unknown } };
    const id = message.id === undefined ? undefined : JSON.stringify(message.id);
    if (typeof message.method === "string") {
      if (id !== undefined) methods.set(id, message.method);
      return id === undefined ? message.method : `${message.method} (id ${id})`;
    }
    const answers = id === undefined ? undefined : methods.get(id);
    if (message.error)
      return `error ${String(message.error.code)} ${String(message.error.message)}${answers ? ` for ${answers}` : ""} (id ${id})`;
    return `result of ${answers ?? "an unknown request"} (id ${id})`;
  };
  return Array.isArray(value) ? `batch: ${value.map(one).join(", ")}` : one(value);
}

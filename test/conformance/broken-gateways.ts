/**
 * Deliberately broken gateways, for proving that the certification suite catches faults:
 * the reference gateway, run in this process, behind a proxy on the wire that breaks it
 * in one known way. The product has no fault switch; each break is made here, from the
 * outside, by rewriting what the client sends or what the gateway answers.
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { QUESTION_TIMEOUT_MS } from "../../packages/conformance/src/certify.js";
import { ModelServer } from "../../packages/conformance/src/model-server.js";
import { createInMemoryPair, type Transport } from "../../packages/rpc/src/index.js";
import { resolveConfig } from "../../packages/gateway/src/config.js";
import { createGateway } from "../../packages/gateway/src/serve.js";
import { MemoryEventStore } from "../../packages/gateway/src/store/memory.js";

type Message = {
  id?: string | number | null;
  method?: string;
  params?: Record<string, unknown>;
  result?: Record<string, unknown>;
  error?: { code: number; message: string; data?: { reason?: string } };
};

/** One break: rewrites of frames in each direction (returning the frames to pass on, in order). */
interface Break {
  /** What the client sent, on its way to the gateway. */
  readonly toGateway?: (message: Message) => Message;
  /** What the gateway sent, on its way to the client: none, one or several messages. */
  readonly toClient?: (message: Message, sent: ReadonlyMap<string | number, Message>) => Message[];
  /** Answers a request in the gateway's place, which never sees it (undefined: passed on). */
  readonly answer?: (message: Message) => Message | undefined;
  /** The gateway crashes when it receives a frame this returns true for. */
  readonly crashOn?: (text: string) => boolean;
}

/** Every broken gateway, with what it breaks. */
export const BROKEN = {
  "notifications-out-of-order": "sends an agent message's first delta before the item/started of its item",
  "missing-terminal": "never sends turn/completed (the turn still completes in the log)",
  "allow-for-turn-ignored": "asks again for an action an allow_for_turn answer already covers",
  "denied-tool-runs": "runs a tool call even though it was denied",
  "duplicate-route-actions": "accepts a delegation route that names an action twice",
  "wrong-error-code": "answers turn_not_found errors with the code of thread_not_found",
  "stale-revoke-accepted": "revokes a route whatever expected_generation it is given",
  "wrong-last-sequence": "reports a turn/items last_sequence one past the last event",
  "question-expires-early": "expires a question two seconds before the expires_at it announces",
  "question-replay-not-surfaced": "replays an open question in turn/items with already_surfaced false, as if never delivered",
  "crashes-on-parse-error": "crashes (a traceback on stderr, exit 1; in this process, the connection closes) on a frame that is not JSON",
  "no-turn-resume": "does not implement turn/resume: answers it with -32601",
  "no-turn-items": "does not implement turn/items: answers it with -32601",
  "no-usage": "never reports a turn's usage",
  "no-command-items": "runs shell commands without any commandExecution item",
  "no-capability-resolution": "never reports how a turn's capabilities were resolved",
} as const satisfies Record<string, string>;

/** The -32601 answer of a gateway that does not implement the method `message` names. */
const notImplemented = (message: Message): Message => ({
  id: message.id ?? null,
  error: { code: -32601, message: "Method not found", data: { reason: "method_not_found" } },
});

/** `value` with every property named `key` removed, at any depth. */
function without(value: unknown, key: string): unknown {
  if (Array.isArray(value)) return value.map((v) => without(v, key));
  if (typeof value !== "object" || value === null) return value;
  return Object.fromEntries(
    Object.entries(value)
      .filter(([k]) => k !== key)
      .map(([k, v]) => [k, without(v, key)]),
  );
}

export type BrokenGatewayName = keyof typeof BROKEN;

/** Passes an approval through as another resolution, and reports it back as the one the client gave. */
function answeredAs(given: string, passedOn: string): Break {
  const rewritten = new Set<string>();
  const restore = (body: Record<string, unknown> | undefined) =>
    body && typeof body.request_id === "string" && rewritten.has(body.request_id) && body.resolution === passedOn
      ? { ...body, resolution: given }
      : body;
  return {
    toGateway: (m) => {
      if (m.method !== "turn/permission/request/respond" || m.params?.resolution !== given) return m;
      rewritten.add(m.params.request_id as string);
      return { ...m, params: { ...m.params, resolution: passedOn } };
    },
    toClient: (m) => [m.params ? { ...m, params: restore(m.params)! } : m.result ? { ...m, result: restore(m.result)! } : m],
  };
}

function breakFor(name: BrokenGatewayName): Break {
  switch (name) {
    case "notifications-out-of-order": {
      // The item/started of an agent message is held back until its first delta has gone
      // out. The two swap sequence numbers, on the wire and in turn/items, so that the
      // only thing wrong is the order of the item's events.
      let held: Message | undefined;
      const swapped = new Map<string, [number, number][]>();
      const withSequence = (m: Message, sequence: number): Message => ({ ...m, params: { ...m.params, sequence } });
      return {
        toClient: (m, sent) => {
          const item = m.params?.item as { type?: string } | undefined;
          if (m.method === "item/started" && item?.type === "agentMessage" && held === undefined) {
            held = m;
            return [];
          }
          const request = m.id === undefined || m.id === null ? undefined : sent.get(m.id);
          if (request?.method === "turn/items" && m.result) {
            const events = [...(m.result.events as { sequence: number; params: Record<string, unknown> }[])];
            for (const [a, b] of swapped.get(m.result.turn_id as string) ?? []) {
              const ia = events.findIndex((e) => e.sequence === a);
              const ib = events.findIndex((e) => e.sequence === b);
              if (ia < 0 || ib < 0) continue;
              const [ea, eb] = [events[ia]!, events[ib]!];
              events[ia] = { ...eb, sequence: a, params: { ...eb.params, sequence: a } };
              events[ib] = { ...ea, sequence: b, params: { ...ea.params, sequence: b } };
            }
            return [{ ...m, result: { ...m.result, events } }];
          }
          // Frames about other things (the work view's notifications, say) pass meanwhile.
          if (held === undefined || m.params?.item_id !== held.params?.item_id) return [m];
          const release = held;
          held = undefined;
          if (m.method !== "item/agent_message/delta") return [release, m];
          const [first, second] = [release.params!.sequence as number, m.params!.sequence as number];
          const turn = m.params!.turn_id as string;
          swapped.set(turn, [...(swapped.get(turn) ?? []), [first, second]]);
          return [withSequence(m, first), withSequence(release, second)];
        },
      };
    }
    case "question-expires-early": {
      // The question announces a later expiry than the one its timer keeps, live and in turn/items.
      const later = (params: Record<string, unknown>) => {
        const question = params.question as { expires_at: string };
        return { ...params, question: { ...question, expires_at: new Date(Date.parse(question.expires_at) + 2_000).toISOString() } };
      };
      return {
        toClient: (m, sent) => {
          if (m.method === "turn/question/opened") return [{ ...m, params: later(m.params!) }];
          const request = m.id === undefined || m.id === null ? undefined : sent.get(m.id);
          if (request?.method !== "turn/items" || m.result === undefined) return [m];
          const events = (m.result.events as { method: string; params: Record<string, unknown> }[]).map((e) =>
            e.method === "turn/question/opened" ? { ...e, params: later(e.params) } : e,
          );
          return [{ ...m, result: { ...m.result, events } }];
        },
      };
    }
    case "question-replay-not-surfaced":
      return {
        toClient: (m, sent) => {
          const request = m.id === undefined || m.id === null ? undefined : sent.get(m.id);
          if (request?.method !== "turn/items" || m.result === undefined) return [m];
          const events = (m.result.events as { method: string; params: Record<string, unknown> }[]).map((e) =>
            e.method === "turn/question/opened" ? { ...e, params: { ...e.params, already_surfaced: false } } : e,
          );
          return [{ ...m, result: { ...m.result, events } }];
        },
      };
    case "missing-terminal":
      return { toClient: (m) => (m.method === "turn/completed" ? [] : [m]) };
    case "crashes-on-parse-error":
      return {
        crashOn: (text) => {
          try {
            JSON.parse(text);
            return false;
          } catch {
            return true;
          }
        },
      };
    case "no-turn-resume":
      return { answer: (m) => (m.method === "turn/resume" ? notImplemented(m) : undefined) };
    case "no-turn-items":
      return { answer: (m) => (m.method === "turn/items" ? notImplemented(m) : undefined) };
    case "no-usage":
      return { toClient: (m) => [without(m, "usage") as Message] };
    case "no-capability-resolution": {
      // The turn's own capabilities (their resolutions) go; the backend's capabilities stay.
      const bare = (body: Record<string, unknown> | undefined) => {
        if (!body?.turn || typeof body.turn !== "object") return body;
        const { capabilities: _dropped, ...turn } = body.turn as Record<string, unknown>;
        return { ...body, turn };
      };
      return {
        toClient: (m) => {
          const events = m.result?.events as { params?: Record<string, unknown> }[] | undefined;
          const result = events ? { ...m.result, events: events.map((e) => ({ ...e, params: bare(e.params) })) } : bare(m.result);
          return [{ ...m, ...(m.params ? { params: bare(m.params)! } : {}), ...(result ? { result } : {}) }];
        },
      };
    }
    case "no-command-items": {
      // The items of shell commands, and everything about them, never reach the client, live or replayed.
      const commands = new Set<string>();
      const isCommand = (method: string | undefined, params: Record<string, unknown> | undefined) => {
        const item = params?.item as { type?: string; id?: string } | undefined;
        if (item?.type === "commandExecution" && typeof params?.item_id === "string") commands.add(params.item_id);
        return method?.startsWith("item/") === true && typeof params?.item_id === "string" && commands.has(params.item_id);
      };
      return {
        toClient: (m, sent) => {
          if (isCommand(m.method, m.params)) return [];
          const request = m.id === undefined || m.id === null ? undefined : sent.get(m.id);
          if (request?.method !== "turn/items" || m.result === undefined) return [m];
          const events = (m.result.events as { method: string; params: Record<string, unknown> }[]).filter(
            (e) => !isCommand(e.method, e.params),
          );
          return [{ ...m, result: { ...m.result, events } }];
        },
      };
    }
    case "wrong-error-code":
      return { toClient: (m) => [m.error?.data?.reason === "turn_not_found" ? { ...m, error: { ...m.error, code: -32001 } } : m] };
    case "wrong-last-sequence":
      return {
        toClient: (m, sent) => {
          const request = m.id === undefined || m.id === null ? undefined : sent.get(m.id);
          if (request?.method !== "turn/items" || m.result === undefined) return [m];
          return [{ ...m, result: { ...m.result, last_sequence: (m.result.last_sequence as number) + 1 } }];
        },
      };
    case "allow-for-turn-ignored":
      return answeredAs("allow_for_turn", "allow_once");
    case "denied-tool-runs":
      return answeredAs("deny", "allow_once");
    case "duplicate-route-actions":
      return {
        toGateway: (m) => {
          const actions = m.params?.allowed_actions;
          if (m.method !== "agent/route/create" || !Array.isArray(actions)) return m;
          return { ...m, params: { ...m.params, allowed_actions: [...new Set(actions)] } };
        },
      };
    case "stale-revoke-accepted": {
      // The generation of every route seen in an answer, so a revoke can be sent with the current one.
      const generations = new Map<string, number>();
      const note = (route: unknown) => {
        const r = route as { route_id?: unknown; generation?: unknown } | undefined;
        if (typeof r?.route_id === "string" && typeof r.generation === "number") generations.set(r.route_id, r.generation);
      };
      return {
        toGateway: (m) => {
          const id = m.params?.route_id;
          if (m.method !== "agent/route/revoke" || typeof id !== "string" || !generations.has(id)) return m;
          return { ...m, params: { ...m.params, expected_generation: generations.get(id) } };
        },
        toClient: (m) => {
          note(m.result);
          for (const route of (m.result?.routes as unknown[] | undefined) ?? []) note(route);
          return [m];
        },
      };
    }
  }
}

/** Puts `broken` between a client and the gateway side of a connection, rewriting frames both ways; `crash` is how it crashes. */
function proxy(gatewaySide: Transport, broken: Break, crash: () => void): void {
  const requests = new Map<string | number, Message>();
  const receive = gatewaySide.onmessage;
  const send = gatewaySide.send.bind(gatewaySide);
  gatewaySide.onmessage = (frame) => {
    if (broken.crashOn?.(frame)) return crash();
    const pass = (m: Message) => {
      const passed = broken.toGateway ? broken.toGateway(m) : m;
      if (passed.method !== undefined && passed.id !== undefined && passed.id !== null) requests.set(passed.id, passed);
      return passed;
    };
    let parsed: unknown;
    try {
      parsed = JSON.parse(frame);
    } catch {
      // What is not JSON goes to the gateway as it came: answering it is the gateway's part.
      return receive?.(frame);
    }
    if (typeof parsed !== "object" || parsed === null) return receive?.(frame);
    const answered = Array.isArray(parsed) ? undefined : broken.answer?.(parsed as Message);
    if (answered) return void send(JSON.stringify({ jsonrpc: "2.0", ...answered })).catch(() => undefined);
    receive?.(
      JSON.stringify(
        Array.isArray(parsed) ? parsed.map((m) => (typeof m === "object" && m !== null ? pass(m as Message) : m)) : pass(parsed as Message),
      ),
    );
  };
  gatewaySide.send = async (frame) => {
    const parsed = JSON.parse(frame) as Message | Message[];
    if (Array.isArray(parsed)) {
      const out = broken.toClient ? parsed.flatMap((m) => broken.toClient!(m, requests)) : parsed;
      if (out.length) await send(JSON.stringify(out));
      return;
    }
    // A single message may become none or several: each is its own frame.
    for (const m of broken.toClient ? broken.toClient(parsed, requests) : [parsed]) await send(JSON.stringify(m));
  };
}

/**
 * The reference gateway broken by `name`, pointed at the model server at `providerUrl`;
 * `crash` is what a crash does (default: the connection closes).
 */
export function createBrokenGateway(
  name: BrokenGatewayName,
  providerUrl: string,
  crash?: () => void,
): { connect(transport: Transport): void; close(): Promise<void> } {
  const store = new MemoryEventStore();
  const config = resolveConfig(
    { tools: { default_cwd: mkdtempSync(join(tmpdir(), "turnspec-broken-")) }, questions: { timeout_ms: QUESTION_TIMEOUT_MS } },
    { providerUrl },
  );
  const gateway = createGateway(store, config, () => undefined);
  return {
    connect: (transport) => {
      gateway.connect(transport);
      proxy(transport, breakFor(name), crash ?? (() => void transport.close()));
    },
    close: async () => {
      await gateway.close();
      store.close();
    },
  };
}

export interface RunningBrokenGateway {
  /** The client's end of the connection to the broken gateway. */
  readonly transport: Transport;
  /** The scripted model server the gateway is pointed at. */
  readonly model: ModelServer;
  close(): Promise<void>;
}

/** Starts the reference gateway in this process, broken by `name`, with its own model server. */
export async function startBrokenGateway(name: BrokenGatewayName): Promise<RunningBrokenGateway> {
  const model = new ModelServer();
  const broken = createBrokenGateway(name, await model.start());
  const [clientSide, gatewaySide] = createInMemoryPair();
  broken.connect(gatewaySide);
  return {
    transport: clientSide,
    model,
    close: async () => {
      await broken.close();
      await model.close();
    },
  };
}

/**
 * A broken client, written without the SDK's turn feed: it shows every delta as it arrives,
 * and after a reconnect it replays the turn from turn/items from the start and shows all of
 * it again (no sequence is remembered), then goes on with what arrived meanwhile. Everything
 * else it does right: tokens back unmodified, what it does not know ignored, a gap in a
 * live stream reported, errors reported with their reason.
 *   node --import ./scripts/from-source.mjs test/conformance/broken-clients/duplicates-after-reconnect.ts
 */
import { connectWebSocket, ProtocolClient, RpcError, type Transport } from "../../../packages/client/src/index.js";
import type { AnyNotification } from "../../../generated/registry.js";
import { failure, serveCommands, type Answer, type CommandHandlers } from "../../../examples/clients/typescript/driver.js";

type Json = Record<string, unknown>;
type Params = { thread_id?: string; turn_id?: string; sequence?: number; [key: string]: unknown };

interface FollowedTurn {
  readonly threadId: string;
  readonly turnId: string;
  handle(n: { method: string; params: Params }): void;
}

let url = "";
let token = "";
let client: ProtocolClient | undefined;
let closing = false;
const turns = new Set<FollowedTurn>();
/** Live notifications held while a reconnect replays turn/items. */
let held: { method: string; params: Params }[] | undefined;

async function open(): Promise<void> {
  const transport: Transport = await connectWebSocket(url, { token });
  const fresh = new ProtocolClient(transport);
  const onClose = transport.onclose;
  transport.onclose = () => {
    onClose?.();
    if (!closing && fresh === client) void reconnect();
  };
  fresh.onAny((n: AnyNotification) => {
    const message = { method: n.method, params: n.params as unknown as Params };
    if (held) held.push(message);
    else for (const turn of turns) turn.handle(message);
  });
  await fresh.start();
  client = fresh;
}

async function reconnect(): Promise<void> {
  held = [];
  for (let attempt = 0; attempt < 40; attempt++) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    try {
      await open();
      break;
    } catch {
      // The gateway is not back yet.
    }
  }
  // Everything again, from the start of each turn.
  for (const turn of turns) {
    const page = await client!.turnItems({ thread_id: turn.threadId, turn_id: turn.turnId });
    for (const event of page.events)
      turn.handle({ method: event.method, params: { ...(event.params as unknown as Params), replayed: true } });
  }
  const later = held;
  held = undefined;
  for (const message of later) for (const turn of turns) turn.handle(message);
}

const handlers: CommandHandlers = {
  hello: async () => ({ result: { name: "a client without a turn feed" } }),
  connect: async (command) => {
    url = command.url as string;
    token = command.token as string;
    await open();
    return { result: {} };
  },
  start_thread: async () => ({ result: { thread_id: (await client!.threadStart({})).thread.id } }),
  run_turn: (command) =>
    new Promise<Answer>((resolve) => {
      const threadId = command.thread_id as string;
      const turnId = command.turn_id as string;
      const approvals = (command.approvals ?? []) as ("allow_once" | "allow_for_turn" | "deny")[];
      const answers = (command.answers ?? []) as number[];
      const deltas: string[] = [];
      const texts = new Map<string, string>();
      let output = "";
      let last = 0;
      let asked = 0;
      let questions = 0;
      const end = (answer: Answer) => {
        turns.delete(turn);
        resolve(answer);
      };
      const turn: FollowedTurn = {
        threadId,
        turnId,
        handle: ({ method, params }) => {
          if (params.turn_id !== turnId || typeof params.sequence !== "number") return;
          if (!params.replayed && params.sequence > last + 1)
            return end({
              error: { kind: "invalid_event", message: `events ${last + 1}…${params.sequence - 1} of turn ${turnId} never arrived` },
            });
          last = Math.max(last, params.sequence);
          if (method === "item/agent_message/delta") {
            deltas.push(params.delta as string);
            texts.set(params.item_id as string, (texts.get(params.item_id as string) ?? "") + (params.delta as string));
          } else if (method === "item/command_execution/output_delta") output += params.delta as string;
          else if (method === "turn/permission/request/opened") {
            const request = params.request as { request_id: string; resolve_token?: string };
            const resolution = approvals[asked++];
            if (resolution)
              void client!
                .turnPermissionRequestRespond({
                  request_id: request.request_id,
                  resolution,
                  ...(request.resolve_token ? { resolve_token: request.resolve_token } : {}),
                })
                .catch(() => undefined);
          } else if (method === "turn/question/opened") {
            const question = params.question as { call_id: string; index: number; answer_token: string; options: { id: string }[] };
            const option = question.options[answers[questions++] ?? -1];
            if (option)
              void client!
                .turnQuestionRespond({
                  thread_id: threadId,
                  turn_id: turnId,
                  call_id: question.call_id,
                  index: question.index,
                  option_id: option.id,
                  answer_token: question.answer_token,
                })
                .catch(() => undefined);
          } else if (method === "turn/completed" || method === "turn/failed") {
            end({ result: { status: (params.turn as { status: string }).status, text: [...texts.values()].join(""), deltas, output } });
          }
        },
      };
      turns.add(turn);
      client!
        .turnStart({ thread_id: threadId, turn_id: turnId, input: [{ type: "text", text: command.text as string, textElements: [] }] })
        .catch((error: unknown) => end(error instanceof RpcError ? failure(error) : failure(error)));
    }),
  close: async () => {
    closing = true;
    await client?.close();
    return { result: {} };
  },
};

await serveCommands(handlers, async () => {
  closing = true;
  await client?.close();
});
process.exit(0);

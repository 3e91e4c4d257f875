// The reference client driver: the client SDK (@turnspec/client) behind the command protocol of
// `turnspec certify --client-cmd` (docs/certify-client.md). The suite writes one command a line on
// stdin; each is answered with one line on stdout. What the SDK does is what is certified: the
// driver only turns commands into SDK calls and what the SDK yields into answers.
//
//   turnspec certify --client-cmd "npx tsx driver.ts"
//
// (In this repository, with the packages resolved to their sources:
//   node bin/turnspec.js certify --client-cmd "node --import ./scripts/from-source.mjs examples/clients/typescript/driver.ts")
import { createRequire } from "node:module";
import { createInterface } from "node:readline";
import { pathToFileURL } from "node:url";
import { connectWebSocket, GatewayConnection, RpcError, TurnClientError, type ApprovalAnswer, type Transport } from "@turnspec/client";

type Json = Record<string, unknown>;

/** What a command is answered with: a result, or an error the client reports to its user. */
export type Answer = { result: Json } | { error: { kind: string; message: string; reason?: string } };

/** One handler per command of the protocol. */
export type CommandHandlers = Record<"hello" | "connect" | "start_thread" | "run_turn" | "close", (command: Json) => Promise<Answer>>;

/** Reads commands from stdin until it ends and answers each on stdout, one at a time, in order. */
export async function serveCommands(handlers: CommandHandlers, onEnd: () => Promise<void>): Promise<void> {
  const write = (line: Json) => process.stdout.write(`${JSON.stringify(line)}\n`);
  for await (const line of createInterface({ input: process.stdin })) {
    if (line.trim() === "") continue;
    let command: Json;
    try {
      command = JSON.parse(line) as Json;
    } catch {
      process.stderr.write(`not a command (not JSON): ${line}\n`);
      continue;
    }
    const handler = handlers[command.command as keyof CommandHandlers];
    const answer: Answer = handler
      ? await handler(command).catch((error: unknown) => failure(error))
      : { error: { kind: "unsupported", message: `no command ${String(command.command)}` } };
    write({ id: command.id, ...answer });
  }
  await onEnd();
}

/** An error as the client reports it: the SDK's kind, the gateway's reason when it answered one. */
export function failure(error: unknown): Answer {
  if (error instanceof TurnClientError) {
    const cause = error.cause;
    return {
      error: { kind: error.kind, message: error.message, ...(cause instanceof RpcError && cause.reason ? { reason: cause.reason } : {}) },
    };
  }
  if (error instanceof RpcError)
    return { error: { kind: "rpc_error", message: error.message, ...(error.reason ? { reason: error.reason } : {}) } };
  return { error: { kind: "internal", message: error instanceof Error ? error.message : String(error) } };
}

export interface DriverOptions {
  /** Opens a transport to the gateway; called again for each reconnect. Default: a WebSocket with the bearer token. */
  readonly connect?: (url: string, token: string) => Transport | Promise<Transport>;
}

/** The commands, carried out with the SDK: a GatewayConnection that reconnects by itself, and streamTurn. */
export function sdkCommands(options: DriverOptions = {}): { handlers: CommandHandlers; end: () => Promise<void> } {
  const open = options.connect ?? ((url: string, token: string) => connectWebSocket(url, { token }));
  let connection: GatewayConnection | undefined;
  const connected = () => {
    if (!connection) throw new Error("not connected: the connect command comes first");
    return connection;
  };
  const { version } = createRequire(import.meta.url)("@turnspec/client/package.json") as { version: string };
  const handlers: CommandHandlers = {
    hello: async () => ({ result: { name: "@turnspec/client", version } }),
    connect: async (command) => {
      const url = command.url as string;
      const token = command.token as string;
      connection = await GatewayConnection.open({
        connect: () => open(url, token),
        reconnect: { delaysMs: [50, 100, 250, 500], maxAttempts: 20 },
      });
      return { result: {} };
    },
    start_thread: async () => {
      const { thread } = await connected().client.threadStart({});
      return { result: { thread_id: thread.id } };
    },
    run_turn: async (command) => {
      const approvals = (command.approvals ?? []) as ApprovalAnswer[];
      const answers = (command.answers ?? []) as number[];
      const deltas: string[] = [];
      /** Each agent message's text as last shown, in the order the messages began. */
      const texts = new Map<string, string>();
      let output = "";
      let status = "";
      const answering: Promise<unknown>[] = [];
      let asked = 0;
      let questions = 0;
      const turn = {
        thread_id: command.thread_id as string,
        turn_id: command.turn_id as string,
        input: [{ type: "text" as const, text: command.text as string, textElements: [] }],
      };
      for await (const event of connected().streamTurn(turn)) {
        if (event.type === "text_delta") {
          deltas.push(event.delta);
          texts.set(event.itemId, event.text);
        } else if (event.type === "tool_output" && (event.stream === "stdout" || event.stream === "stderr")) output += event.delta;
        else if (event.type === "approval_pending") {
          const resolution = approvals[asked++];
          // The user was given no answer for it: the request stays open, as it would on a screen.
          if (resolution !== undefined) answering.push(event.respond(resolution));
        } else if (event.type === "question_pending" && !event.alreadySurfaced) {
          const option = event.question.options[answers[questions++] ?? -1];
          if (option) answering.push(event.answer(option.id));
        } else if (event.type === "done") status = event.status;
      }
      // An answer the gateway refused is the turn's error, reported like any other.
      await Promise.all(answering);
      return { result: { status, text: [...texts.values()].join(""), deltas, output } };
    },
    close: async () => {
      await connection?.close();
      connection = undefined;
      return { result: {} };
    },
  };
  return { handlers, end: async () => void (await connection?.close()) };
}

// Run as a program (not imported by another driver): serve the commands on stdin and stdout.
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { handlers, end } = sdkCommands();
  await serveCommands(handlers, end);
  process.exit(0);
}

/**
 * Load on a running gateway (`turnspec serve --port`): 100 WebSocket connections, each
 * running 10 short scripted turns (a file write and streamed deltas) at the same time,
 * while some of them also send broken frames and a few more connections break their own
 * connection (a message over the read limit, a text message that is not UTF-8). Every
 * turn of every connection completes, and what each client received live is exactly
 * what `turn/items` replays: nothing lost, nothing from another connection.
 */
import { once } from "node:events";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import WebSocket from "ws";
import { afterAll, describe, expect, it } from "vitest";
import { startWebSocketGateway, type ServeProcess } from "../../bench/gateway-process.js";
import { liveVersusItems, runTurn } from "../../bench/turn-driver.js";
import { connectWebSocket } from "../../packages/rpc/src/transport/websocket.js";
import { startStrictClient, type StrictClient } from "../../bench/strict-client.js";

const CONNECTIONS = 100;
const TURNS = 10;
/** Every NOISY-th connection sends broken frames between its turns. */
const NOISY = 5;
const VANDALS = 10;
const MAX_FRAME_BYTES = 64 * 1024;

/** Frames that are wrong in every way a connection can survive: each is answered with an error (id null or its own). */
const BROKEN_FRAMES = [
  "{not json",
  "[]",
  `{"jsonrpc":"2.0","id":"broken-1","method":"no/such/method","params":{}}`,
  `{"jsonrpc":"2.0","id":"broken-2","method":"turn/start","params":{"thread_id":7}}`,
  `{"jsonrpc":"1.0","id":"broken-3","method":"thread/get"}`,
  `{"jsonrpc":"2.0","id":"stray","result":{}}`,
  `{"jsonrpc":"2.0","method":"turn/completed","params":{"forged":true}}`,
  `{"jsonrpc":"2.0","id":"big","method":"thread/start","params":{"cwd":"${"x".repeat(MAX_FRAME_BYTES)}"}}`,
];

let gateway: ServeProcess & { readonly url: string };
afterAll(async () => {
  await gateway?.stop();
});

interface Outcome {
  readonly problems: string[];
  readonly turns: number;
}

async function connection(index: number, cwd: string): Promise<Outcome> {
  const noisy = index % NOISY === 0;
  const transport = await connectWebSocket(gateway.url);
  const client: StrictClient = await startStrictClient(transport);
  const problems: string[] = [];
  let turns = 0;
  try {
    const { thread } = await client.client.threadStart({ cwd });
    for (let t = 0; t < TURNS; t++) {
      if (noisy) for (const frame of BROKEN_FRAMES) await transport.send(frame);
      const turnId = `trn_load_${index}_${t}`;
      const end = await runTurn(client, thread.id, turnId, { deltas: 12, writeFile: `out-${index}-${t}.txt` });
      if (end.method !== "turn/completed") problems.push(`${turnId} ended ${end.method}`);
      problems.push(...(await liveVersusItems(client, thread.id, turnId)));
      turns++;
    }
    // A quiet client saw nothing it had to reject; a noisy one saw only the errors its own broken frames earned.
    const unexpected = noisy
      ? client.protocolErrors.filter((e) => !/without an id|Payload too large|unknown id "broken-/.test(e))
      : client.protocolErrors;
    problems.push(...unexpected.map((e) => `connection ${index}: ${e.slice(0, 300)}`));
    // Notifications of other connections' threads never arrive here.
    const foreign = client.received.filter((n) => "thread_id" in n.params && n.params.thread_id !== thread.id);
    if (foreign.length > 0) problems.push(`connection ${index} received ${foreign.length} notifications of other threads`);
  } catch (error) {
    problems.push(`connection ${index}: ${(error as Error).message}`);
  } finally {
    await client.client.close();
  }
  return { problems, turns };
}

/** A connection that breaks itself: too big a message to read at all, or a text message that is not UTF-8. */
async function vandal(index: number): Promise<number> {
  const socket = new WebSocket(gateway.url, { perMessageDeflate: false });
  await once(socket, "open");
  const closed = once(socket, "close") as Promise<[number, Buffer]>;
  if (index % 2 === 0) socket.send(Buffer.alloc(4 * 1024 * 1024 + MAX_FRAME_BYTES, 0x20));
  // ws does not check what it sends: this text frame carries bytes no UTF-8 text holds.
  else socket.send(Buffer.from([0x7b, 0xff, 0xfe, 0x7d]), { binary: false });
  const [code] = await closed;
  return code;
}

describe("100 WebSocket connections × 10 turns, some of them sending broken frames", () => {
  it("completes every turn of every connection; each client's events equal turn/items", async () => {
    gateway = await startWebSocketGateway({ maxFrameBytes: MAX_FRAME_BYTES });
    const cwd = mkdtempSync(join(tmpdir(), "turnspec-load-"));
    const [outcomes, vandalCodes] = await Promise.all([
      Promise.all(Array.from({ length: CONNECTIONS }, (_, i) => connection(i, cwd))),
      Promise.all(Array.from({ length: VANDALS }, (_, i) => vandal(i))),
    ]);
    expect(outcomes.flatMap((o) => o.problems)).toEqual([]);
    expect(outcomes.reduce((n, o) => n + o.turns, 0)).toBe(CONNECTIONS * TURNS);
    // 1009: message too big; 1007: not UTF-8. Only their own connections closed.
    expect(vandalCodes.sort()).toEqual([...Array<number>(VANDALS / 2).fill(1007), ...Array<number>(VANDALS / 2).fill(1009)]);
    expect(gateway.child.exitCode).toBeNull();
  }, 90_000);
});

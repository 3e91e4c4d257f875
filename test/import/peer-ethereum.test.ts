/**
 * An Ethereum node from npm (ganache) over JSON-RPC over HTTP, driven by the client generated
 * from the import of Ethereum's execution-apis OpenRPC document: eth_chainId, eth_accounts,
 * eth_getBalance (its params sent by position, as the node takes them), a batch, and an
 * error. Every frame of the session, both ways, is checked against the import with its
 * sender. Skipped with one line when the published document is not here, or when ganache is
 * not installed: with its dependencies it is 170 MB, an opt-in install kept out of the lock
 * file (`npm install --no-save ganache@<GANACHE_VERSION>`), as the Codex CLI is.
 *
 * ganache answers every error with -32700 (parse error), whatever the cause; the standard
 * code is one any request may get, so the frame is valid, if unhelpful.
 */
import { createRequire } from "node:module";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HttpClientTransport } from "../../packages/rpc/src/transport/index.js";
import { RpcError } from "../../packages/rpc/src/index.js";
import { importedPeer, recording, sessionFindings, type ImportedPeer } from "./peers.js";
import { sayMissing, SOURCES } from "./published.js";

const source = SOURCES.find((s) => s.name === "Ethereum execution APIs")!;
const require = createRequire(import.meta.url);

/** The ganache this test was written against. */
export const GANACHE_VERSION = "7.9.2";
const ganacheInstalled = (() => {
  try {
    require.resolve("ganache");
    return true;
  } catch {
    return false;
  }
})();
const runs = source.present && ganacheInstalled;

interface Ganache {
  listen(port: number, host: string): Promise<void>;
  address(): { port: number };
  close(): Promise<void>;
}

let peer: ImportedPeer;
let node: Ganache;
let url: string;

beforeAll(async () => {
  if (!runs) return;
  peer = await importedPeer(source, "ethereum");
  const ganache = require("ganache") as { server(options: object): Ganache };
  node = ganache.server({ logging: { quiet: true }, wallet: { deterministic: true }, chain: { chainId: 1337 } });
  await node.listen(0, "127.0.0.1");
  url = `http://127.0.0.1:${node.address().port}`;
}, 120_000);

afterAll(async () => {
  await node?.close();
  peer?.cleanup();
});

describe.skipIf(!runs)("the client generated from Ethereum's OpenRPC document against ganache over HTTP", () => {
  it("eth_chainId, eth_accounts, eth_getBalance by position, a batch and an error, every frame valid both ways", async () => {
    const wire = recording(new HttpClientTransport(url));
    const dropped: string[] = [];
    const client = new peer.client.ProtocolClient(wire.transport, {
      validateIncoming: "strict",
      onProtocolError: (e: Error) => dropped.push(e.message),
    });
    await client.start();

    expect(await client.ethChainId()).toBe("0x539");
    const accounts = (await client.ethAccounts()) as string[];
    expect(accounts.length).toBeGreaterThan(0);
    // Named params, sent by position: [address, block].
    expect(await client.ethGetBalance({ Address: accounts[0], Block: "latest" })).toMatch(/^0x[0-9a-f]+$/);
    const balanceFrame = wire.frames.find((f) => (f.message as { method?: string }).method === "eth_getBalance")!;
    expect((balanceFrame.message as { params: unknown }).params).toEqual([accounts[0], "latest"]);

    const outcomes = await client.rpc.batch([
      { method: "eth_blockNumber", params: {} },
      { method: "eth_getBalance", params: { Address: accounts[1], Block: "latest" } },
      { method: "eth_chainId", params: {} },
    ]);
    expect(outcomes.map((o: PromiseSettledResult<unknown>) => o.status)).toEqual(["fulfilled", "fulfilled", "fulfilled"]);
    expect(Array.isArray(wire.frames.find((f) => Array.isArray(f.message))?.message)).toBe(true);

    const error = await client.ethSendRawTransaction({ Transaction: "0x1234" }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RpcError);
    expect((error as RpcError).code).toBe(-32700);

    await client.close();
    expect(dropped).toEqual([]);
    // Five POSTs, five answers (the batch is one frame each way).
    expect(wire.frames.length).toBe(10);
    expect(sessionFindings(peer.model, wire.frames)).toEqual([]);
  }, 120_000);
});

if (!source.present) sayMissing(source);
else if (!ganacheInstalled) console.log(`skipped: ganache is not installed (an opt-in: npm install --no-save ganache@${GANACHE_VERSION})`);

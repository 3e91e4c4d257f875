/** A gateway on the in-memory transport pair, with a strict client that records every notification. */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ProtocolClient } from "../../generated/client.js";
import type { AnyNotification } from "../../generated/registry.js";
import type { AgentDelegationRouteCreateParams, TurnStartParams } from "../../generated/types.js";
import { resolveConfig } from "../../packages/gateway/src/config.js";
import { Gateway } from "../../packages/gateway/src/engine/gateway.js";
import type { ModelProvider } from "../../packages/gateway/src/providers/provider.js";
import { ScriptedProvider, type ScriptStep } from "../../packages/gateway/src/providers/scripted.js";
import { createInMemoryPair, type Transport } from "../../packages/rpc/src/index.js";
import { MemoryEventStore } from "../../packages/gateway/src/store/memory.js";
import type { EventStore } from "../../packages/gateway/src/store/store.js";
import { builtinTools } from "../../packages/gateway/src/tools/registry.js";
import type { Tool } from "../../packages/gateway/src/tools/tool.js";
import { startStrictClient } from "../../bench/strict-client.js";

export interface Harness {
  readonly gateway: Gateway;
  readonly client: ProtocolClient;
  readonly store: EventStore;
  /** Every notification received, in order. */
  readonly received: AnyNotification[];
  /** Frames the strict client rejected: must stay empty. */
  readonly protocolErrors: string[];
  readonly cwd: string;
  /** Starts a thread (Agent mode, in a fresh temporary folder unless told otherwise). */
  thread(params?: Parameters<ProtocolClient["threadStart"]>[0]): Promise<string>;
  /** Starts a turn and resolves with its terminal notification. */
  runTurn(params: TurnStartParams): Promise<AnyNotification>;
  /** Resolves at the first notification matching `predicate` (already received or still to come). */
  waitFor(predicate: (n: AnyNotification) => boolean): Promise<AnyNotification>;
  close(): Promise<void>;
}

export function script(...steps: ScriptStep[]): string {
  return JSON.stringify({ script: steps });
}

export const text = (value: string) => [{ type: "text" as const, text: value, textElements: [] }];

/** An execution_bound route between two threads of the default workspace on this gateway, for `source_execution_id`. */
export function routeParams(
  source: string,
  destination: string,
  overrides: Partial<AgentDelegationRouteCreateParams> = {},
): AgentDelegationRouteCreateParams {
  return {
    kind: "execution_bound",
    source_execution_id: "trn_source",
    source_capsule_id: source,
    source_thread_id: source,
    source_workspace_id: "ws_default",
    source_gateway_id: "gw_local",
    destination_thread_id: destination,
    destination_workspace_id: "ws_default",
    destination_gateway_id: "gw_local",
    allowed_actions: ["start_agent", "deliver_result"],
    disclosure: { text: true, artifacts: false, context: false, userInput: false, resultReturn: "full_result" },
    source_policy_generation: 1,
    destination_policy_generation: 1,
    hop_count: 0,
    max_hops: 2,
    ...overrides,
  };
}

export interface HarnessOptions {
  readonly store?: EventStore;
  readonly providers?: ReadonlyMap<string, ModelProvider>;
  readonly config?: Parameters<typeof resolveConfig>[0];
  /** The tools the model may call. Default: the built-in ones. */
  readonly tools?: readonly Tool[];
  /** Wraps the client's end of the transport pair, e.g. to record every frame both ways. */
  readonly clientTransport?: (transport: Transport) => Transport;
  /** Wraps the gateway's end of the transport pair, e.g. to look at every frame as it leaves. */
  readonly serverTransport?: (transport: Transport) => Transport;
  /** The gateway's clock. Default: the system's. */
  readonly now?: () => Date;
  /** The gateway's diagnostics. Default: dropped. */
  readonly log?: (message: string) => void;
}

export async function startHarness(options: HarnessOptions = {}): Promise<Harness> {
  const cwd = mkdtempSync(join(tmpdir(), "turnspec-gateway-"));
  const store = options.store ?? new MemoryEventStore();
  const config = resolveConfig({ ...options.config, tools: { default_cwd: cwd, ...options.config?.tools } });
  const gateway = new Gateway({
    store,
    config,
    providers: options.providers ?? new Map([["scripted", new ScriptedProvider()]]),
    tools: options.tools ?? builtinTools(),
    ...(options.now ? { now: options.now } : {}),
    ...(options.log ? { log: options.log } : {}),
  });
  const [clientSide, serverSide] = createInMemoryPair();
  gateway.connect(options.serverTransport?.(serverSide) ?? serverSide);
  const { client, received, protocolErrors, waitFor } = await startStrictClient(options.clientTransport?.(clientSide) ?? clientSide);
  return {
    gateway,
    client,
    store,
    received,
    protocolErrors,
    cwd,
    thread: async (params = {}) => (await client.threadStart({ cwd, ...params })).thread.id,
    runTurn: async (params) => {
      const terminal = waitFor((n) => (n.method === "turn/completed" || n.method === "turn/failed") && n.params.turn_id === params.turn_id);
      await client.turnStart(params);
      return terminal;
    },
    waitFor,
    close: async () => {
      await gateway.close();
      await client.close();
    },
  };
}

/** The notifications of one turn, in the order received. */
export function ofTurn(received: readonly AnyNotification[], turnId: string): AnyNotification[] {
  return received.filter((n) => "turn_id" in n.params && n.params.turn_id === turnId);
}

/** A gateway on in-memory transports for client SDK tests, with as many client connections as a test opens. */
import { GatewayConnection } from "../../packages/client/src/index.js";
import { createInMemoryPair, type Transport } from "../../packages/rpc/src/index.js";
import { startHarness, type Harness, type HarnessOptions } from "../gateway/harness.js";

export interface ClientGateway {
  readonly harness: Harness;
  /** A new transport to the gateway (client side, not yet started). */
  transport(): Transport;
  /** A client SDK connection over a new transport; closed with the gateway. */
  open(): Promise<GatewayConnection>;
  close(): Promise<void>;
}

export async function startClientGateway(options: HarnessOptions = {}): Promise<ClientGateway> {
  const harness = await startHarness(options);
  const connections: GatewayConnection[] = [];
  const transport = () => {
    const [client, server] = createInMemoryPair();
    harness.gateway.connect(server);
    return client;
  };
  return {
    harness,
    transport,
    open: async () => {
      const connection = await GatewayConnection.open({ connect: transport, validateIncoming: "strict" });
      connections.push(connection);
      return connection;
    },
    close: async () => {
      await harness.close();
      for (const c of connections) await c.close();
      if (harness.protocolErrors.length) throw new Error(`the gateway sent invalid frames: ${harness.protocolErrors.join("\n")}`);
    },
  };
}

/** Every value of an async iterable, in order. */
export async function collect<T>(iterable: AsyncIterable<T>): Promise<T[]> {
  const values: T[] = [];
  for await (const value of iterable) values.push(value);
  return values;
}

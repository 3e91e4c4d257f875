/** An HTTP server with the AG-UI bridge at every path: POST a RunAgentInput, read the SSE stream. */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { GatewayConnection } from "../connection.js";
import { AgUiBridge, type AgUiBridgeOptions } from "./bridge.js";

export interface AgUiServer {
  readonly server: Server;
  /** The URL an AG-UI client posts to. */
  readonly url: string;
  close(): Promise<void>;
}

/** Listens on `port` (0 picks a free one) at `host` (default 127.0.0.1). */
export async function serveAgUi(connection: GatewayConnection, port: number, options: AgUiBridgeOptions & { readonly host?: string } = {}): Promise<AgUiServer> {
  const bridge = new AgUiBridge(connection, options);
  const server = createServer(bridge.handler);
  const host = options.host ?? "127.0.0.1";
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => resolve());
  });
  const address = server.address() as AddressInfo;
  return {
    server,
    url: `http://${host}:${address.port}/`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

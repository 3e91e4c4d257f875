/**
 * `turnspec serve --ag-ui PORT`: the reference gateway in this process, served to AG-UI
 * clients through the client SDK's AG-UI bridge over an in-memory transport pair.
 */
import { AgUiBridge } from "../client/ag-ui/bridge.js";
import { GatewayConnection } from "../client/connection.js";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { createInMemoryPair } from "../rpc/index.js";
import { openGateway, type ServeOptions } from "../runtime/serve.js";

export async function serveAgUiGateway(options: Pick<ServeOptions, "store" | "memory" | "configFile" | "providerUrl" | "maxFrameBytes" | "questionTimeoutMs"> & { readonly port: number; readonly host: string }, log: (message: string) => void = (m) => process.stderr.write(`${m}\n`)) {
  const running = await openGateway(options, log);
  const connection = await GatewayConnection.open({
    connect: () => {
      const [client, server] = createInMemoryPair();
      running.gateway.connect(server);
      return client;
    },
  });
  const http = createServer(new AgUiBridge(connection).handler);
  await new Promise<void>((resolve, reject) => {
    http.once("error", reject);
    http.listen(options.port, options.host, () => resolve());
  });
  log(`AG-UI endpoint on http://${options.host}:${(http.address() as AddressInfo).port}/ (POST a RunAgentInput; events stream as SSE)`);
  return {
    port: (http.address() as AddressInfo).port,
    close: async () => {
      await new Promise<void>((resolve) => http.close(() => resolve()));
      await connection.close();
      await running.close();
    },
  };
}

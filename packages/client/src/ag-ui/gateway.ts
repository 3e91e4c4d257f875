/**
 * A gateway in this process served to AG-UI clients (`turnspec serve --ag-ui PORT`): the
 * bridge talks to the gateway through the client SDK over an in-memory transport pair, as
 * it would over a WebSocket to a gateway elsewhere. The gateway is opened by the caller
 * (the CLI hands in the reference's `openGateway`), so the client SDK never imports it.
 */
import { createInMemoryPair, type Transport } from "@turnspec/rpc";
import { GatewayConnection } from "../connection.js";
import { serveAgUi, type AgUiServeOptions } from "./serve.js";

/** What the bridge needs of a gateway run in this process. */
export interface InProcessGateway {
  readonly gateway: { connect(transport: Transport): unknown };
  /** The SQLite file of its event log, when it has one: the bridge's thread map is kept beside it. */
  readonly storeFile?: string;
  close(): Promise<void>;
}

export interface AgUiGatewayOptions extends Omit<AgUiServeOptions, "threadMapFile" | "host"> {
  readonly port: number;
  readonly host: string;
  /** Where the AG-UI thread pairs are kept. Default: beside the store file (see threadMapBeside), else in memory. */
  readonly threadMapFile?: string;
}

export interface RunningAgUiGateway {
  /** The URL an AG-UI client posts to. */
  readonly url: string;
  readonly port: number;
  /** The bearer token requests must carry, or null when none is asked for. */
  readonly token: string | null;
  close(): Promise<void>;
}

/** The thread map file kept beside a store file. */
export const threadMapBeside = (storeFile: string): string => `${storeFile}.ag-ui-threads.json`;

/** Opens the gateway with `open`, then serves it to AG-UI clients on `options.port` until closed. */
export async function serveAgUiGateway(
  open: (log: (message: string) => void) => Promise<InProcessGateway>,
  options: AgUiGatewayOptions,
  log: (message: string) => void = (m) => process.stderr.write(`${m}\n`),
): Promise<RunningAgUiGateway> {
  const running = await open(log);
  const threadMapFile = options.threadMapFile ?? (running.storeFile === undefined ? undefined : threadMapBeside(running.storeFile));
  let connection: GatewayConnection | undefined;
  try {
    connection = await GatewayConnection.open({
      connect: () => {
        const [client, server] = createInMemoryPair();
        running.gateway.connect(server);
        return client;
      },
    });
    const served = await serveAgUi(connection, options.port, { ...options, ...(threadMapFile === undefined ? {} : { threadMapFile }) });
    log(
      `AG-UI endpoint on ${served.url} (POST a RunAgentInput with Content-Type: application/json${served.token === null ? "" : " and Authorization: Bearer <token>"}; events stream as SSE)`,
    );
    // A token the caller gave is not printed: it came from a file or the environment.
    if (served.token !== null && options.token === undefined) log(`token: ${served.token}`);
    if (served.token === null)
      log("warning: authentication is off (--no-auth): any local user or process that reaches this port can run commands as you");
    log(
      threadMapFile === undefined
        ? "AG-UI thread pairs are kept in memory (the event log is not a file): after a restart, AG-UI threads start new gateway threads"
        : `AG-UI thread pairs are kept in ${threadMapFile}`,
    );
    const opened = connection;
    return {
      url: served.url,
      port: Number(new URL(served.url).port),
      token: served.token,
      close: async () => {
        await served.close();
        await opened.close();
        await running.close();
      },
    };
  } catch (error) {
    await connection?.close();
    await running.close();
    throw error;
  }
}

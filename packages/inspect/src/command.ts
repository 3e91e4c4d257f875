/**
 * `turnspec inspect`: starts the inspector's server and prints the address to open (with
 * its one-time token); opens nothing by itself. Runs until interrupted (Ctrl-C), then
 * stops the server and the gateway it started. Exit 2 for a usage mistake or a gateway
 * that cannot be started.
 */
import { InspectorError, startInspector, type InspectorOptions } from "./server.js";

interface Io {
  readonly out: { write(text: string): unknown };
  readonly err: { write(text: string): unknown };
}

const defaultIo: Io = { out: process.stdout, err: process.stderr };

/** Starts the inspector; resolves with the exit code once it has been stopped (or could not start). */
export async function runInspect(options: InspectorOptions, io: Io = defaultIo): Promise<number> {
  let inspector;
  try {
    inspector = await startInspector({ ...options, log: (message) => io.err.write(`turnspec inspect: ${message}\n`) });
  } catch (error) {
    if (!(error instanceof InspectorError)) throw error;
    io.err.write(`turnspec inspect: ${error.message}\n`);
    return 2;
  }
  const gateway =
    options.gatewayCmd !== undefined
      ? `the gateway \`${options.gatewayCmd}\``
      : options.gatewayUrl !== undefined
        ? "the gateway at --gateway-url"
        : "a gateway you name on the page";
  io.out.write(`turnspec inspect: open ${inspector.url} to inspect ${gateway} (Ctrl-C stops)\n`);
  await new Promise<void>((resolve) => {
    const stop = () => {
      process.off("SIGINT", stop);
      process.off("SIGTERM", stop);
      resolve();
    };
    process.once("SIGINT", stop);
    process.once("SIGTERM", stop);
  });
  await inspector.close();
  return 0;
}

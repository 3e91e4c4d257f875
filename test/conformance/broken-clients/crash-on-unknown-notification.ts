/**
 * A broken client: the reference driver, but a notification whose method it does not know
 * crashes it: the process exits at once with the error's stack trace on stderr, as one
 * whose exhaustive switch throws into nothing that catches would.
 *   node --import ./scripts/from-source.mjs test/conformance/broken-clients/crash-on-unknown-notification.ts
 */
import { connectWebSocket } from "../../../packages/client/src/index.js";
import { notifications } from "../../../generated/registry.js";
import { sdkCommands, serveCommands } from "../../../examples/clients/typescript/driver.js";
import { wrapTransport } from "./wrap.js";

const known = new Set(Object.keys(notifications));
const { handlers, end } = sdkCommands({
  connect: async (url, token) =>
    wrapTransport(await connectWebSocket(url, { token }), {
      receive: (frame) => {
        const message = JSON.parse(frame) as { id?: unknown; method?: string };
        if (message.method === undefined || message.id !== undefined || known.has(message.method)) return;
        process.stderr.write(`${new Error(`unhandled notification ${message.method}`).stack}\n`);
        process.exit(1);
      },
    }),
});
await serveCommands(handlers, end);
process.exit(0);

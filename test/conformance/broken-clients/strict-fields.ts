/**
 * A broken client: the reference driver, but it refuses any frame the schemas do not
 * describe exactly (strict validation of every result and notification), and stops with
 * an error naming the first one, as a client generated without tolerant validation would.
 *   node --import ./scripts/from-source.mjs test/conformance/broken-clients/strict-fields.ts
 */
import { connectWebSocket } from "../../../packages/client/src/index.js";
import { notifications } from "../../../generated/registry.js";
import { notificationIssues, resultIssues } from "../../../generated/validators.js";
import { sdkCommands, serveCommands } from "../../../examples/clients/typescript/driver.js";
import { wrapTransport } from "./wrap.js";

const known = new Set(Object.keys(notifications));
const asked = new Map<unknown, string>();
const refuse = (what: string) => {
  process.stderr.write(`refused ${what}: it does not match the schema exactly\n`);
  process.exit(1);
};
const { handlers, end } = sdkCommands({
  connect: async (url, token) =>
    wrapTransport(await connectWebSocket(url, { token }), {
      send: (frame) => {
        const message = JSON.parse(frame) as { id?: unknown; method?: string };
        if (message.id !== undefined && message.method) asked.set(message.id, message.method);
        return frame;
      },
      receive: (frame) => {
        const message = JSON.parse(frame) as { id?: unknown; method?: string; params?: unknown; result?: unknown };
        if (message.method !== undefined && known.has(message.method) && notificationIssues(message.method, message.params, "strict"))
          refuse(`a ${message.method} notification`);
        const method = message.id === undefined ? undefined : asked.get(message.id);
        if (method !== undefined && "result" in message && resultIssues(method, message.result, "strict"))
          refuse(`the result of ${method}`);
      },
    }),
});
await serveCommands(handlers, end);
process.exit(0);

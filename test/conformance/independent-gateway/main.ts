/**
 * The independent gateway on stdio, as `turnspec certify --gateway-cmd` starts it:
 *   node --import tsx test/conformance/independent-gateway/main.ts --provider-url URL
 * serves one client on stdin/stdout until stdin ends.
 */
import { parseArgs } from "node:util";
import { errors } from "../../../generated/registry.js";
import { stdioServerTransport } from "@turnspec/rpc/transport";
import { serveIndependentGateway } from "./gateway.js";

const { values } = parseArgs({
  options: {
    "provider-url": { type: "string" },
    model: { type: "string" },
    "gateway-id": { type: "string" },
    "serve-connection": { type: "boolean" },
  },
  strict: true,
});
const providerUrl = values["provider-url"] ?? process.env.TURNSPEC_PROVIDER_URL;
if (!providerUrl) {
  process.stderr.write(
    "usage: main.ts --provider-url URL [--model NAME] [--gateway-id ID] [--serve-connection] (or set TURNSPEC_PROVIDER_URL)\n",
  );
  process.exit(2);
}
const transport = stdioServerTransport({
  maxFrameBytes: 4 * 1024 * 1024,
  oversizedReply: (limit, bytes) =>
    JSON.stringify({
      jsonrpc: "2.0",
      id: null,
      error: {
        code: errors.payload_too_large.code,
        message: `a frame of ${bytes} bytes is over this gateway's limit of ${limit}`,
        data: { reason: "payload_too_large", limit, bytes },
      },
    }),
});
transport.onclose = () => process.exit(0);
await serveIndependentGateway(transport, {
  providerUrl,
  ...(values.model ? { model: values.model } : {}),
  ...(values["gateway-id"] ? { gatewayId: values["gateway-id"] } : {}),
  ...(values["serve-connection"] ? { serveWith: "connection" as const } : {}),
});

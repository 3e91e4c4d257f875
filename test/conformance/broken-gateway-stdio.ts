/**
 * A broken gateway on stdio, for tests of `turnspec certify --gateway-cmd`:
 *   node --import tsx test/conformance/broken-gateway-stdio.ts NAME --provider-url URL
 * serves the reference gateway broken by NAME (broken-gateways.ts) until stdin ends.
 */
import { StdioTransport } from "../../packages/rpc/src/transport/stdio.js";
import { BROKEN, createBrokenGateway, type BrokenGatewayName } from "./broken-gateways.js";

const [name, flag, providerUrl] = process.argv.slice(2);
if (name === undefined || !Object.hasOwn(BROKEN, name) || flag !== "--provider-url" || providerUrl === undefined) {
  process.stderr.write(`usage: broken-gateway-stdio.ts NAME --provider-url URL, NAME one of ${Object.keys(BROKEN).join(", ")}\n`);
  process.exit(2);
}
// A crash as a gateway process has one: a traceback on stderr, exit 1.
const crash = () => {
  process.stderr.write(
    'Traceback (most recent call last):\n  File "gw.py", line 12, in read_frame\njson.decoder.JSONDecodeError: Expecting value: line 1 column 40 (char 39)\n',
  );
  process.exit(1);
};
const broken = createBrokenGateway(name as BrokenGatewayName, providerUrl, crash);
const transport = new StdioTransport({ input: process.stdin, output: process.stdout, maxFrameBytes: 8 * 1024 * 1024 });
broken.connect(transport);
const closed = transport.onclose;
transport.onclose = () => {
  closed?.();
  void broken.close().then(() => process.exit(0));
};

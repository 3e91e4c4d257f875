/**
 * A protocol team's own small protocol (one method, one domain error), and the code it
 * writes against what turnspec generates from it: the package tests install turnspec's
 * packages into apps and run this there.
 */
const STANDARD_ERRORS = [
  [-32700, "parse_error", "Parse error"],
  [-32600, "invalid_request", "Invalid Request"],
  [-32601, "method_not_found", "Method not found"],
  [-32602, "invalid_params", "Invalid params"],
  [-32603, "internal_error", "Internal error"],
] as const;

/** The app's own protocol: one method, one domain error, no notifications. */
export function writeGreeterSchemas(write: (path: string, content: string | object) => void): void {
  const schema = (name: string, title: string, body: object) => ({
    $schema: "https://json-schema.org/draft/2020-12/schema",
    $id: `https://example.test/greeter/${name}`,
    title,
    ...body,
  });
  write("schemas/errors.json", {
    description: "Errors of the greeter protocol.",
    errors: [
      ...STANDARD_ERRORS.map(([code, reason, message]) => ({ code, reason, message, description: `${message}.`, standard: true })),
      { code: -32001, reason: "unknown_name", message: "Unknown name", description: "Nobody of that name is known." },
    ],
  });
  write("schemas/protocol.json", {
    title: "greeter protocol",
    version: "1.0.0",
    description: "Says hello.",
    schemaBaseUri: "https://example.test/greeter/",
    errors: { $ref: "errors.json" },
    methods: [
      {
        name: "greet/say",
        direction: "client_to_server",
        summary: "Greets someone.",
        params: { $ref: "greet_say_params.json" },
        result: { $ref: "greet_say_result.json" },
        errors: ["unknown_name"],
      },
    ],
    notifications: [],
  });
  write(
    "schemas/greet_say_params.json",
    schema("greet_say_params.json", "GreetSayParams", {
      description: "Who to greet.",
      type: "object",
      additionalProperties: false,
      required: ["name"],
      properties: {
        name: { type: "string", minLength: 1, description: "The name." },
        shout: { type: "boolean", description: "In capitals." },
      },
    }),
  );
  write(
    "schemas/greet_say_result.json",
    schema("greet_say_result.json", "GreetSayResult", {
      description: "The greeting.",
      type: "object",
      additionalProperties: false,
      required: ["text"],
      properties: { text: { type: "string", description: "The greeting." } },
    }),
  );
}

/**
 * Code a protocol team writes against the generated output: a server from the generated
 * dispatcher and a client from the generated client, linked by an in-memory pair. `gen` is
 * the folder of the output, `support` where the JSON-RPC support module comes from.
 */
export function appSource(gen: string, support: string): string {
  return `import { createInMemoryPair, RpcError } from "${support}";
import { ProtocolClient, createDispatcher, protocolError, isGreetSayParams, type GreetSayParams } from "${gen}/index.js";

const dispatcher = createDispatcher({
  "greet/say": (params: GreetSayParams) => {
    if (params.name === "nobody") throw protocolError("unknown_name");
    const text = \`hello, \${params.name}\`;
    return { text: params.shout === true ? text.toUpperCase() : text };
  },
});
const [clientSide, serverSide] = createInMemoryPair();
serverSide.onmessage = (frame: string) => {
  void dispatcher.handleFrame(frame, undefined).then((reply) => (reply === undefined ? undefined : serverSide.send(reply)));
};
await serverSide.start();
const client = new ProtocolClient(clientSide);
await client.start();
const lines: string[] = [];
lines.push((await client.greetSay({ name: "ada", shout: true })).text);
try {
  await client.greetSay({ name: "nobody" });
} catch (error) {
  lines.push(error instanceof RpcError ? \`rpc error \${error.code}\` : \`other error \${String(error)}\`);
}
const wire = await dispatcher.handleFrame(JSON.stringify({ jsonrpc: "2.0", id: 7, method: "greet/say", params: { name: "" } }), undefined);
lines.push(String(JSON.parse(wire ?? "null").error.code));
lines.push(String(isGreetSayParams({ name: "x", extra: 1 })));
await client.close();
console.log(lines.join("\\n"));
`;
}
export const EXPECTED_OUTPUT = ["HELLO, ADA", "rpc error -32001", "-32602", "false"].join("\n");

/**
 * client.go: the typed client. One method per request the client sends, typed subscriptions
 * to the notifications the server sends, senders for those the client sends, and
 * ClientHandlers, an interface with one method per request the server sends back (a missing
 * one does not compile).
 */
import type { ProtocolModel } from "../../model.js";
import { comment, goString } from "./names.js";
import { registryNames } from "./registry.js";
import type { GoShapes, Shape } from "./shapes.js";
import { goType, reader, writeCall, writer } from "./types.js";

/** The shape of a named type, for the typed signatures. */
export function named(shapes: GoShapes, title: string): Shape {
  return { kind: "decl", decl: shapes.byTitle.get(title)! };
}

/** A named type's value written as a jsonrpc.Value. */
export function write(shape: Shape, value: string): string {
  return writeCall(shape, value);
}

export function clientFile(model: ProtocolModel, shapes: GoShapes): string {
  const names = registryNames(model);
  const calls = model.methods.filter((m) => m.direction === "client_to_server");
  const answers = model.methods.filter((m) => m.direction === "server_to_client");
  const heard = model.notifications.filter((n) => n.direction === "server_to_client");
  const sent = model.notifications.filter((n) => n.direction === "client_to_server");
  const out: string[] = [];
  out.push(
    ...comment(`ClientHandlers serves the requests the server sends its client, one method each (a missing one does not compile). A handler gets the params, validated; the result it returns is validated and sent, and a *jsonrpc.Error it returns (see ProtocolError) is answered as it is.${answers.length === 0 ? ` ${model.title} has no such request: pass nil.` : ""}`),
    "type ClientHandlers interface {",
  );
  for (const m of answers) {
    out.push(...comment(`${names.method.get(m.name)} answers ${m.name}: ${m.summary}`, "\t"), `\t${names.method.get(m.name)}(ctx context.Context, params ${m.params}) (${goType(named(shapes, m.result))}, error)`);
  }
  out.push("}", "");
  out.push(
    "// ClientOptions are the settings of a client's connection: how what it sends is checked",
    "// (Outgoing, default strict) and what it receives (Incoming, default tolerant), a request",
    "// timeout, and where dropped frames and handler failures are reported.",
    "type ClientOptions = jsonrpc.ConnOptions",
    "",
    ...comment(`Client is a connection to a ${model.title} server. Errors from the server are *jsonrpc.Error (code, message, data); problems on this side are *jsonrpc.LocalError (a timeout, a closed connection, a message that failed validation).`),
    "type Client struct {",
    "\tconn *jsonrpc.Conn",
    "}",
    "",
    "// NewClient starts a client over a transport: it reads from it until Close or until the",
    "// transport ends. handlers serve the requests the server sends back.",
    "func NewClient(t jsonrpc.Transport, handlers ClientHandlers, opts ClientOptions) *Client {",
    "\tconn := jsonrpc.NewConn(t, Protocol, jsonrpc.ClientToServer, nil, opts)",
  );
  if (answers.length) {
    out.push("\tif handlers != nil {");
    for (const m of answers) {
      out.push(`\t\tconn.Handle(Method${names.method.get(m.name)}, jsonrpc.Handle(${reader(named(shapes, m.params))}, ${writer(named(shapes, m.result))}, handlers.${names.method.get(m.name)}))`);
    }
    out.push("\t}");
  } else out.push("\t_ = handlers");
  out.push(
    "\tgo func() {",
    "\t\t_ = conn.Run(context.Background())",
    "\t}()",
    "\treturn &Client{conn: conn}",
    "}",
    "",
    "// Conn is the JSON-RPC connection underneath, for what the typed methods do not cover.",
    "func (c *Client) Conn() *jsonrpc.Conn { return c.conn }",
    "",
    "// Close closes the connection; waiting requests fail with a local TransportClosed error.",
    "func (c *Client) Close() error { return c.conn.Close() }",
    "",
    "// Done is closed when the connection has closed.",
    "func (c *Client) Done() <-chan struct{} { return c.conn.Done() }",
    "",
    "// OnAny calls f with every notification the server sends, by name, params checked but not read.",
    "func (c *Client) OnAny(f func(method string, params *jsonrpc.Value)) func() { return c.conn.OnAny(f) }",
  );
  for (const m of calls) {
    const name = names.method.get(m.name)!;
    const result = named(shapes, m.result);
    out.push(
      "",
      ...comment(`${name} sends ${m.name}: ${m.summary}`),
      `func (c *Client) ${name}(ctx context.Context, params ${m.params}) (${goType(result)}, error) {`,
      `\treturn jsonrpc.Call(ctx, c.conn, Method${name}, ${write(named(shapes, m.params), "params")}, ${reader(result)})`,
      "}",
    );
  }
  for (const n of heard) {
    const name = names.notification.get(n.name)!;
    out.push(
      "",
      ...comment(`On${name} calls f with each ${n.name} the server sends (${n.summary.replace(/\.$/, "")}), in order, on the goroutine that reads the connection: f must not block. It returns the function that unsubscribes.`),
      `func (c *Client) On${name}(f func(${n.params})) func() {`,
      `\treturn jsonrpc.Subscribe(c.conn, Notification${name}, ${reader(named(shapes, n.params))}, f)`,
      "}",
    );
  }
  for (const n of sent) {
    const name = names.notification.get(n.name)!;
    out.push(
      "",
      ...comment(`Notify${name} sends ${n.name}: ${n.summary}`),
      `func (c *Client) Notify${name}(ctx context.Context, params ${n.params}) error {`,
      `\treturn c.conn.Notify(ctx, Notification${name}, ${write(named(shapes, n.params), "params")})`,
      "}",
    );
  }
  void goString;
  return out.join("\n");
}

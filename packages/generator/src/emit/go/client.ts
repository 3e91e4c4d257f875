/**
 * client.go: the typed client. One method per request the client sends, typed subscriptions
 * to the notifications the server sends, senders for those the client sends, and
 * ClientHandlers, an interface with one method per request the server sends back (a missing
 * one does not compile). A message either side may send is both sent and answered.
 */
import type { MethodModel, NotificationModel, ProtocolModel } from "../../model.js";
import {
  callMethod,
  handlerMethod,
  handleRegistration,
  notifyMethod,
  onMethod,
  paramsOf,
  sentByClient,
  sentByServer,
  type Speaking,
} from "./messages.js";
import { comment } from "./names.js";
import { registryNames, type RegistryNames } from "./registry.js";
import type { GoShapes, Shape } from "./shapes.js";
import { goType, reader, writeCall, writer } from "./types.js";

/** The shape of a named type, for the typed signatures. */
export function named(shapes: GoShapes, title: string): Shape {
  return { kind: "decl", decl: shapes.byTitle.get(title)! };
}

/** How a Go end speaks a method. */
export function speakingMethod(m: MethodModel, names: RegistryNames, shapes: GoShapes): Speaking {
  const params = paramsOf(m);
  const name = names.method.get(m.name)!;
  return {
    constant: `Method${name}`,
    name,
    params,
    ...(params === undefined
      ? {}
      : { readParams: reader(named(shapes, params)), writeParams: (value: string) => writeCall(named(shapes, params), value) }),
  };
}

/** How a Go end speaks a notification. */
export function speakingNotification(n: NotificationModel, names: RegistryNames, shapes: GoShapes): Speaking {
  const params = paramsOf(n);
  const name = names.notification.get(n.name)!;
  return {
    constant: `Notification${name}`,
    name,
    params,
    ...(params === undefined
      ? {}
      : { readParams: reader(named(shapes, params)), writeParams: (value: string) => writeCall(named(shapes, params), value) }),
  };
}

export function clientFile(model: ProtocolModel, shapes: GoShapes): string {
  const names = registryNames(model);
  const calls = model.methods.filter(sentByClient);
  const answers = model.methods.filter(sentByServer);
  const heard = model.notifications.filter(sentByServer);
  const sent = model.notifications.filter(sentByClient);
  const out: string[] = [];
  out.push(
    ...comment(
      `ClientHandlers serves the requests the server sends its client, one method each (a missing one does not compile). A handler gets the params, validated; the result it returns is validated and sent, and a *jsonrpc.Error it returns (see ProtocolError) is answered as it is.${answers.length === 0 ? ` ${model.title} has no such request: pass nil.` : ""}`,
    ),
    "type ClientHandlers interface {",
  );
  for (const m of answers) {
    out.push(
      ...comment(`${names.method.get(m.name)} answers ${m.name}: ${m.summary}`, "\t"),
      `\t${handlerMethod(speakingMethod(m, names, shapes), goType(named(shapes, m.result)))}`,
    );
  }
  out.push("}", "");
  out.push(
    "// ClientOptions are the settings of a client's connection: how what it sends is checked",
    "// (Outgoing, default strict) and what it receives (Incoming, default tolerant), a request",
    "// timeout, and where dropped frames and handler failures are reported.",
    "type ClientOptions = jsonrpc.ConnOptions",
    "",
    ...comment(
      `Client is a connection to a ${model.title} server. Errors from the server are *jsonrpc.Error (code, message, data); problems on this side are *jsonrpc.LocalError (a timeout, a closed connection, a message that failed validation).`,
    ),
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
      const s = speakingMethod(m, names, shapes);
      out.push(`\t\t${handleRegistration("conn", s, writer(named(shapes, m.result)), `handlers.${s.name}`)}`);
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
    const s = speakingMethod(m, names, shapes);
    const result = named(shapes, m.result);
    out.push(
      "",
      ...callMethod("c *Client", "c.conn", s, goType(result), reader(result), comment(`${s.name} sends ${m.name}: ${m.summary}`)),
    );
  }
  for (const n of heard) {
    const s = speakingNotification(n, names, shapes);
    out.push(
      "",
      ...onMethod(
        "c *Client",
        "c.conn",
        s,
        comment(
          `On${s.name} calls f with each ${n.name} the server sends (${n.summary.replace(/\.$/, "")}), in order, on the goroutine that reads the connection: f must not block. It returns the function that unsubscribes.`,
        ),
      ),
    );
  }
  for (const n of sent) {
    const s = speakingNotification(n, names, shapes);
    out.push("", ...notifyMethod("c *Client", "c.conn", s, comment(`Notify${s.name} sends ${n.name}: ${n.summary}`)));
  }
  return out.join("\n");
}

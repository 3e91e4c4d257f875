/**
 * server.go: the typed server. Handlers has one method per request a client sends (a
 * missing one does not compile); ServerConn is one client's connection, with a sender per
 * notification the server sends, a method per request it sends its client, and typed
 * subscriptions to the client's notifications; Serve runs one connection. A message either
 * side may send is both sent and answered.
 */
import type { ProtocolModel } from "../../model.js";
import { named, speakingMethod, speakingNotification } from "./client.js";
import { callMethod, handlerMethod, handleRegistration, notifyMethod, onMethod, sentByClient, sentByServer } from "./messages.js";
import { comment } from "./names.js";
import { registryNames } from "./registry.js";
import type { GoShapes } from "./shapes.js";
import { goType, reader, writer } from "./types.js";

export function serverFile(model: ProtocolModel, shapes: GoShapes): string {
  const names = registryNames(model);
  const served = model.methods.filter(sentByClient);
  const calls = model.methods.filter(sentByServer);
  const sent = model.notifications.filter(sentByServer);
  const heard = model.notifications.filter(sentByClient);
  const out: string[] = [];
  out.push(
    ...comment(
      `Handlers serves the requests a client sends, one method each (a missing one does not compile). A handler gets the params, validated; the result it returns is validated and sent, and a *jsonrpc.Error it returns (see ProtocolError) is answered as it is. Any other error is answered as an internal error (-32603), its text kept for OnInternalError. Each request is handled on a goroutine of its own; work whose messages must follow the response (the notifications of what a request started) is started with jsonrpc.AfterReply(ctx, …).`,
    ),
    "type Handlers interface {",
  );
  for (const m of served) {
    out.push(
      ...comment(`${names.method.get(m.name)} answers ${m.name}: ${m.summary}`, "\t"),
      `\t${handlerMethod(speakingMethod(m, names, shapes), goType(named(shapes, m.result)))}`,
    );
  }
  out.push("}", "");
  out.push(
    "// ServerOptions are the settings of a server's connection: how what it receives is checked",
    "// (Incoming, default tolerant) and what it sends (Outgoing, default strict, results",
    "// included), a timeout for its own requests, and where dropped frames and handler failures",
    "// are reported. A server answers frames that are not JSON and invalid requests.",
    "type ServerOptions = jsonrpc.ConnOptions",
    "",
    "// ServerConn is one client's connection: what the server sends that client.",
    "type ServerConn struct {",
    "\tconn *jsonrpc.Conn",
    "}",
    "",
    "// NewServerConn makes the server's end of one client's connection over a transport; Serve runs it.",
    "func NewServerConn(t jsonrpc.Transport, opts ServerOptions) *ServerConn {",
    "\topts.AnswerMalformed = true",
    "\treturn &ServerConn{conn: jsonrpc.NewConn(t, Protocol, jsonrpc.ServerToClient, nil, opts)}",
    "}",
    "",
    "// Serve answers the client's requests with handlers until the transport ends (nil), ctx ends",
    "// or Close is called.",
    "func (s *ServerConn) Serve(ctx context.Context, handlers Handlers) error {",
  );
  for (const m of served) {
    const s = speakingMethod(m, names, shapes);
    out.push(`\t${handleRegistration("s.conn", s, writer(named(shapes, m.result)), `handlers.${s.name}`)}`);
  }
  if (served.length === 0) out.push("\t_ = handlers");
  out.push(
    "\treturn s.conn.Run(ctx)",
    "}",
    "",
    "// Serve serves one client over a transport until it ends (nil) or ctx ends: newHandlers",
    "// makes the connection's handlers, which may keep the connection to notify and call the client.",
    "func Serve(ctx context.Context, t jsonrpc.Transport, newHandlers func(*ServerConn) Handlers, opts ServerOptions) error {",
    "\ts := NewServerConn(t, opts)",
    "\treturn s.Serve(ctx, newHandlers(s))",
    "}",
    "",
    "// Conn is the JSON-RPC connection underneath.",
    "func (s *ServerConn) Conn() *jsonrpc.Conn { return s.conn }",
    "",
    "// Close closes the connection.",
    "func (s *ServerConn) Close() error { return s.conn.Close() }",
    "",
    "// Done is closed when the connection has closed.",
    "func (s *ServerConn) Done() <-chan struct{} { return s.conn.Done() }",
  );
  for (const n of sent) {
    const s = speakingNotification(n, names, shapes);
    out.push(
      "",
      ...notifyMethod(
        "s *ServerConn",
        "s.conn",
        s,
        comment(`Notify${s.name} sends ${n.name}: ${n.summary} An invalid one is a *jsonrpc.LocalError and is not sent.`),
      ),
    );
  }
  for (const m of calls) {
    const s = speakingMethod(m, names, shapes);
    const result = named(shapes, m.result);
    out.push(
      "",
      ...callMethod(
        "s *ServerConn",
        "s.conn",
        s,
        goType(result),
        reader(result),
        comment(`${s.name} sends ${m.name} to the client: ${m.summary}`),
      ),
    );
  }
  for (const n of heard) {
    const s = speakingNotification(n, names, shapes);
    out.push(
      "",
      ...onMethod(
        "s *ServerConn",
        "s.conn",
        s,
        comment(
          `On${s.name} calls f with each ${n.name} the client sends, in order, on the goroutine that reads the connection: f must not block. It returns the function that unsubscribes.`,
        ),
      ),
    );
  }
  return out.join("\n");
}

/**
 * client.rs and server.rs: the two ends of a connection, typed by the registry. Each end has
 * a typed method per request and notification it sends, and a handler trait with a method per
 * request the other end sends (required: a handler that misses one does not compile) and per
 * notification it receives (provided, doing nothing). Both ride on the support module's
 * connection, which validates what arrives before a handler sees it and what leaves before it
 * is sent.
 */
import type { MethodModel, NotificationModel, ProtocolModel } from "../../model.js";
import { docLines, indent, snakeIdent } from "./names.js";

type Side = "client_to_server" | "server_to_client";

interface Names {
  readonly methods: Map<string, string>;
  readonly notifications: Map<string, string>;
}

/**
 * A Rust function name per method and notification, unique within each kind. A method's
 * name is the function's whole name, so a keyword stays a raw identifier (`r#type`); a
 * notification's is always behind a prefix (`notify_`, `on_`), which makes any word a
 * valid identifier.
 */
function names(model: ProtocolModel): Names {
  const pick = (list: readonly { name: string }[], bare: boolean) => {
    const taken = new Set<string>();
    const out = new Map<string, string>();
    for (const { name } of list) {
      let ident = snakeIdent(name);
      for (let i = 2; taken.has(ident); i++) ident = `${snakeIdent(name)}_${i}`;
      taken.add(ident);
      out.set(name, bare ? ident : ident.replace(/^r#/, ""));
    }
    return out;
  };
  return { methods: pick(model.methods, true), notifications: pick(model.notifications, false) };
}

/** A function signature as rustfmt writes it: on one line when it fits in 100 columns, else a parameter a line. */
function signature(prefix: string, name: string, params: readonly string[], returns: string, end: string, level: number): string[] {
  const pad = "    ".repeat(level);
  const one = `${pad}${prefix}${name}(${params.join(", ")})${returns ? ` -> ${returns}` : ""}${end}`;
  if (one.length <= 100) return [one.slice(pad.length)];
  return [`${prefix}${name}(`, ...params.map((p) => `    ${p},`), `)${returns ? ` -> ${returns}` : ""}${end}`];
}

function summary(m: { name: string; summary: string }): string {
  return `\`${m.name}\`: ${m.summary}`;
}

/** Whether the end sending in `side`'s direction sends messages of `direction` (a both-way one on either end). */
const sends = (direction: string, side: Side) => direction === side || direction === "both";
/** Whether that end receives them: those the other end sends, both-way ones included. */
const receives = (direction: string, side: Side) => direction !== side;

/** The params argument of a typed method that sends a message: none, optional or required. */
function sentParams(m: MethodModel | NotificationModel): { param: string[]; arg: string } {
  if (m.params === undefined) return { param: [], arg: "" };
  if (m.paramsOptional) return { param: [`params: Option<&types::${m.params}>`], arg: "params" };
  return { param: [`params: &types::${m.params}`], arg: "Some(params)" };
}

/** The params a handler method takes: none, `Option` when the frame may leave them out, else the type. */
function receivedParams(m: MethodModel | NotificationModel): string[] {
  if (m.params === undefined) return [];
  return [m.paramsOptional ? `params: Option<types::${m.params}>` : `params: types::${m.params}`];
}

/** How the dispatcher decodes a message's params into what its handler method takes. */
function decodeParams(m: MethodModel | NotificationModel): string {
  return `${m.paramsOptional ? "decode_optional_params" : "decode_params"}(${JSON.stringify(m.name)}, params)`;
}

interface EndSpec {
  /** The direction this end sends requests and notifications in. */
  readonly sends: Side;
  /** The typed end: `Client` or `ServerConnection`. */
  readonly end: string;
  /** The handler trait: `ClientHandler` or `ServerHandler`. */
  readonly handler: string;
  /** How a handler method names the end it is given. */
  readonly peer: string;
}

function sentMethods(spec: EndSpec, model: ProtocolModel, n: Names): string[] {
  const out: string[] = [];
  for (const m of model.methods.filter((m) => sends(m.direction, spec.sends))) {
    const fn = n.methods.get(m.name)!;
    const { param, arg } = sentParams(m);
    out.push(
      "",
      ...docLines(summary(m), ""),
      ...signature("pub async fn ", fn, ["&self", ...param], `Result<types::${m.result}, Error>`, " {", 1),
      m.params === undefined
        ? `    self.connection.request_without_params(${JSON.stringify(m.name)}).await`
        : `    self.connection.request(${JSON.stringify(m.name)}, ${arg}).await`,
      "}",
    );
  }
  for (const x of model.notifications.filter((x) => sends(x.direction, spec.sends))) {
    const fn = `notify_${n.notifications.get(x.name)!}`;
    const { param, arg } = sentParams(x);
    out.push(
      "",
      ...docLines(summary(x), ""),
      ...signature("pub fn ", fn, ["&self", ...param], "Result<(), Error>", " {", 1),
      x.params === undefined
        ? `    self.connection.notify_without_params(${JSON.stringify(x.name)})`
        : `    self.connection.notify(${JSON.stringify(x.name)}, ${arg})`,
      "}",
    );
  }
  return out;
}

function handlerTrait(spec: EndSpec, model: ProtocolModel, n: Names, doc: string[]): string[] {
  const requests = model.methods.filter((m) => receives(m.direction, spec.sends));
  const notifications = model.notifications.filter((x) => receives(x.direction, spec.sends));
  const body: string[] = [];
  for (const m of requests) {
    body.push(
      ...(body.length ? [""] : []),
      ...docLines(summary(m), ""),
      ...signature(
        "fn ",
        n.methods.get(m.name)!,
        ["&self", ...receivedParams(m), `${spec.peer}: &${spec.end}`],
        `impl Future<Output = Result<types::${m.result}, RpcError>> + Send`,
        ";",
        1,
      ),
    );
  }
  for (const x of notifications) {
    body.push(
      ...(body.length ? [""] : []),
      ...docLines(`${summary(x)} Does nothing unless implemented.`, ""),
      ...signature(
        "fn ",
        `on_${n.notifications.get(x.name)!}`,
        ["&self", ...receivedParams(x), `${spec.peer}: &${spec.end}`],
        "impl Future<Output = ()> + Send",
        " {",
        1,
      ),
      x.params === undefined ? `    let _ = ${spec.peer};` : `    let _ = (params, ${spec.peer});`,
      "    async {}",
      "}",
    );
  }
  return [...doc, `pub trait ${spec.handler}: Send + Sync + 'static {`, ...indent(body), "}"];
}

function dispatcher(spec: EndSpec, model: ProtocolModel, n: Names): string[] {
  const requests = model.methods.filter((m) => receives(m.direction, spec.sends));
  const notifications = model.notifications.filter((x) => receives(x.direction, spec.sends));
  const make = `let ${spec.peer} = ${spec.end} {\n    connection: peer.clone(),\n};`;
  const request: string[] = requests.length
    ? [
        "fn request(",
        "    &self,",
        "    method: &str,",
        "    params: Option<Json>,",
        "    peer: &Connection,",
        ") -> Option<BoxFuture<Result<Json, RpcError>>> {",
        "    let handler = Arc::clone(&self.0);",
        ...indent(make.split("\n")),
        "    match method {",
        ...indent(
          requests.flatMap((m: MethodModel) => [
            `${JSON.stringify(m.name)} => Some(Box::pin(async move {`,
            ...(m.params === undefined ? [] : [`    let params = ${decodeParams(m)}?;`]),
            `    encode_result(handler.${n.methods.get(m.name)!}(${m.params === undefined ? "" : "params, "}&${spec.peer}).await)`,
            "})),",
          ]),
          2,
        ),
        "        _ => None,",
        "    }",
        "}",
      ]
    : [
        "fn request(",
        "    &self,",
        "    _method: &str,",
        "    _params: Option<Json>,",
        "    _peer: &Connection,",
        ") -> Option<BoxFuture<Result<Json, RpcError>>> {",
        "    None",
        "}",
      ];
  const notification: string[] = notifications.length
    ? [
        "fn notification(&self, method: &str, params: Option<Json>, peer: &Connection) -> BoxFuture<()> {",
        "    let handler = Arc::clone(&self.0);",
        ...indent(make.split("\n")),
        "    match method {",
        ...indent(
          notifications.flatMap((x: NotificationModel) => [
            `${JSON.stringify(x.name)} => Box::pin(async move {`,
            ...(x.params === undefined
              ? [`    handler.on_${n.notifications.get(x.name)!}(&${spec.peer}).await;`]
              : [
                  `    if let Ok(params) = ${decodeParams(x)} {`,
                  `        handler.on_${n.notifications.get(x.name)!}(params, &${spec.peer}).await;`,
                  "    }",
                ]),
            "}),",
          ]),
          2,
        ),
        "        _ => Box::pin(async {}),",
        "    }",
        "}",
      ]
    : [
        "fn notification(&self, _method: &str, _params: Option<Json>, _peer: &Connection) -> BoxFuture<()> {",
        "    Box::pin(async {})",
        "}",
      ];
  return [
    `/// Answers the other end's requests and notifications with a [\`${spec.handler}\`].`,
    ...(requests.length || notifications.length
      ? ["struct Dispatcher<H>(Arc<H>);"]
      : [
          "/// This end receives neither requests nor notifications: the handler is only kept.",
          "struct Dispatcher<H>(#[allow(dead_code)] Arc<H>);",
        ]),
    "",
    `impl<H: ${spec.handler}> Dispatch for Dispatcher<H> {`,
    ...indent(request),
    "",
    ...indent(notification),
    "}",
  ];
}

function imports(code: string, extra: readonly string[]): string[] {
  const support = [
    "BoxFuture",
    "Connection",
    "Dispatch",
    "Error",
    "Options",
    "RpcError",
    "decode_optional_params",
    "decode_params",
    "encode_result",
  ].filter((x) => new RegExp(`\\b${x}\\b`).test(code));
  const lower = support.filter((x) => /^[a-z]/.test(x));
  const upper = support.filter((x) => /^[A-Z]/.test(x));
  return [
    // A handler trait's methods return `impl Future`; an end that receives nothing has none.
    ...(/\bFuture\b/.test(code) ? ["use std::future::Future;"] : []),
    "use std::sync::Arc;",
    "",
    `use crate::jsonrpc::connection::{${[...lower.sort(), ...upper.sort()].join(", ")}};`,
    ...extra,
    "use crate::registry::PROTOCOL;",
    "use crate::types;",
  ];
}

/** client.rs. */
export function emitRustClient(model: ProtocolModel, header: string): string {
  const n = names(model);
  const spec: EndSpec = { sends: "client_to_server", end: "Client", handler: "ClientHandler", peer: "client" };
  const hasRequests = model.methods.some((m) => receives(m.direction, "client_to_server"));
  const body = [
    `/// A client of ${model.title}: a typed method per request and notification it sends. What the`,
    "/// server sends is validated (tolerantly unless the options say otherwise) before the handler",
    "/// sees it; what the client sends is validated strictly, and not sent when its schema refuses it.",
    "#[derive(Clone, Debug)]",
    "pub struct Client {",
    "    connection: Connection,",
    "}",
    "",
    "impl Client {",
    "    /// Starts a client over `transport`, answering the server with `handler` (shared, so that",
    "    /// the caller keeps what it learns); what the server sends is validated tolerantly (a",
    "    /// newer server's additions are kept).",
    `    pub fn start<H: ClientHandler>(transport: Transport, handler: Arc<H>) -> Client {`,
    "        Client::start_with(transport, handler, Options::new(Mode::Tolerant))",
    "    }",
    "",
    "    /// Starts a client with the given options.",
    `    pub fn start_with<H: ClientHandler>(transport: Transport, handler: Arc<H>, options: Options) -> Client {`,
    "        let dispatch = Arc::new(Dispatcher(handler));",
    "        let connection = Connection::start(",
    "            transport,",
    "            &PROTOCOL,",
    "            Direction::ClientToServer,",
    "            dispatch,",
    "            options,",
    "        );",
    "        Client { connection }",
    "    }",
    "",
    "    /// The connection underneath: untyped requests, and waiting for it to close.",
    "    pub fn connection(&self) -> &Connection {",
    "        &self.connection",
    "    }",
    ...indent(sentMethods(spec, model, n)),
    "}",
    "",
    ...handlerTrait(spec, model, n, [
      "/// What a client answers: a method per request the server sends (each one required), and",
      "/// one per notification the server sends (each doing nothing unless implemented).",
    ]),
    ...(hasRequests ? [] : ["", "/// A client that takes every notification and does nothing with it.", "impl ClientHandler for () {}"]),
    "",
    ...dispatcher(spec, model, n),
  ];
  const code = body.join("\n");
  return [
    header,
    `//! The client end of ${model.title} ${model.version}.`,
    "",
    ...imports(code, ["use crate::jsonrpc::protocol::Direction;", "use crate::jsonrpc::{Json, Mode, Transport};"]),
    "",
    code,
  ].join("\n");
}

/** server.rs. */
export function emitRustServer(model: ProtocolModel, header: string): string {
  const n = names(model);
  const spec: EndSpec = { sends: "server_to_client", end: "ServerConnection", handler: "ServerHandler", peer: "peer" };
  const body = [
    `/// One client's connection to a ${model.title} server: a typed method per request and`,
    "/// notification the server sends it, validated strictly and not sent when its schema refuses it.",
    "#[derive(Clone, Debug)]",
    "pub struct ServerConnection {",
    "    connection: Connection,",
    "}",
    "",
    "impl ServerConnection {",
    "    /// The connection underneath: untyped requests, and waiting for it to close.",
    "    pub fn connection(&self) -> &Connection {",
    "        &self.connection",
    "    }",
    ...indent(sentMethods(spec, model, n)),
    "}",
    "",
    ...handlerTrait(spec, model, n, [
      "/// What a server answers: a method per request a client sends (each one required: a handler",
      "/// that misses one does not compile), and one per notification a client sends (each doing",
      "/// nothing unless implemented). Params reach it validated; the result it returns is",
      "/// validated before it is sent (-32603 when its schema refuses it).",
    ]),
    "",
    "/// Serves one client over `transport` with `handler`, validating what the client sends",
    "/// strictly. The connection runs until the client closes it (see `Connection::closed`).",
    "pub fn serve<H: ServerHandler>(transport: Transport, handler: Arc<H>) -> ServerConnection {",
    "    serve_with(transport, handler, Options::new(Mode::Strict))",
    "}",
    "",
    "/// Serves one client with the given options.",
    "pub fn serve_with<H: ServerHandler>(transport: Transport, handler: Arc<H>, options: Options) -> ServerConnection {",
    "    let dispatch = Arc::new(Dispatcher(handler));",
    "    let connection = Connection::start(",
    "        transport,",
    "        &PROTOCOL,",
    "        Direction::ServerToClient,",
    "        dispatch,",
    "        options,",
    "    );",
    "    ServerConnection { connection }",
    "}",
    "",
    ...dispatcher(spec, model, n),
  ];
  const code = body.join("\n");
  return [
    header,
    `//! The server end of ${model.title} ${model.version}.`,
    "",
    ...imports(code, ["use crate::jsonrpc::protocol::Direction;", "use crate::jsonrpc::{Json, Mode, Transport};"]),
    "",
    code,
  ].join("\n");
}

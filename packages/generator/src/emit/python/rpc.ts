/**
 * client.py and server.py: asyncio endpoints with a typed method per request and notification
 * this end sends, and a typing.Protocol of handlers for every request the other end sends, so
 * that a handler object missing one fails the type checker. Notifications received are
 * methods of a base class with no-op defaults, overridden as needed.
 */
import type { Direction, MethodModel, NotificationModel, ProtocolModel } from "../../model.js";
import { docstring, functionName, pyString, usedImport } from "./names.js";

interface Side {
  /** The module's class names. */
  readonly endpoint: string;
  readonly handlers: string;
  readonly notifications: string;
  /** The direction this end sends. */
  readonly sends: Direction;
}

const CLIENT: Side = {
  endpoint: "ProtocolClient",
  handlers: "ClientHandlers",
  notifications: "ClientNotifications",
  sends: "client_to_server",
};
const SERVER: Side = {
  endpoint: "ServerConnection",
  handlers: "ServerHandlers",
  notifications: "ServerNotifications",
  sends: "server_to_client",
};

function sent(model: ProtocolModel, side: Side): { methods: MethodModel[]; notifications: NotificationModel[] } {
  const sends = (direction: Direction) => direction === side.sends || direction === "both";
  return { methods: model.methods.filter((m) => sends(m.direction)), notifications: model.notifications.filter((n) => sends(n.direction)) };
}

function received(model: ProtocolModel, side: Side): { methods: MethodModel[]; notifications: NotificationModel[] } {
  return {
    methods: model.methods.filter((m) => m.direction !== side.sends),
    notifications: model.notifications.filter((n) => n.direction !== side.sends),
  };
}

/** The params parameter of a handler or sender: none when the message takes no params, `| None` when it may leave them out. */
function paramsParameter(m: MethodModel | NotificationModel, optionalDefault: boolean): string {
  if (m.params === undefined) return "";
  return m.paramsOptional ? `, params: models.${m.params} | None${optionalDefault ? " = None" : ""}` : `, params: models.${m.params}`;
}

/** What a handler receives besides `self`, as the call in the handler table passes it. */
function handlerArguments(m: MethodModel, context: string | undefined): string {
  return [...(m.params === undefined ? [] : ["params"]), ...(context ? [context] : [])].join(", ");
}

/** The handler Protocol: one async method per request the other end sends. */
function handlersProtocol(model: ProtocolModel, side: Side, context: string | undefined): string[] {
  const { methods } = received(model, side);
  const lines = [
    `class ${side.handlers}(Protocol):`,
    ...docstring(
      `The requests the other end sends, each answered by the method of its name (a missing one fails the type checker).`,
      "    ",
    ),
  ];
  for (const m of methods) {
    const extra = context ? `, ${context}` : "";
    lines.push(
      "",
      `    async def ${functionName(m.name)}(self${paramsParameter(m, false)}${extra}) -> models.${m.result}:`,
      ...docstring(`${m.name}: ${m.summary}`, "        "),
      "        ...",
    );
  }
  if (methods.length === 0) lines.push("    pass");
  return lines;
}

/** The notifications received: no-op methods to override. */
function notificationsBase(model: ProtocolModel, side: Side): string[] {
  const { notifications } = received(model, side);
  const lines = [
    `class ${side.notifications}:`,
    ...docstring("The notifications the other end sends; override the ones to act on (the others are ignored).", "    "),
  ];
  for (const n of notifications) {
    const parameter = n.params === undefined ? ", params: None" : paramsParameter(n, false);
    lines.push(
      "",
      `    async def on_${functionName(n.name)}(self${parameter}) -> None:`,
      ...docstring(`${n.name}: ${n.summary}${n.params === undefined ? " (it carries no params: None)" : ""}`, "        "),
      "        return None",
    );
  }
  lines.push(
    "",
    "    async def _dispatch(self, name: str, params: Any) -> None:",
    ...(notifications.length
      ? [
          "        method = _RECEIVED.get(name)",
          "        if method is not None:",
          "            # Looked up on the instance, so that a subclass's override answers.",
          "            await getattr(self, method)(params)",
        ]
      : ["        return None"]),
  );
  return lines;
}

function receivedTable(model: ProtocolModel, side: Side): string[] {
  const { notifications } = received(model, side);
  if (notifications.length === 0) return [];
  return [
    `_RECEIVED: dict[str, str] = {`,
    ...notifications.map((n) => `    ${pyString(n.name)}: ${pyString(`on_${functionName(n.name)}`)},`),
    "}",
  ];
}

/** The typed senders of one end: a method per request (awaiting its result) and per notification. */
function senders(model: ProtocolModel, side: Side): string[] {
  const { methods, notifications } = sent(model, side);
  const lines: string[] = [];
  const args = (m: MethodModel | NotificationModel) => (m.params === undefined ? "" : ", params");
  const note = (m: MethodModel | NotificationModel) =>
    m.params !== undefined && m.paramsOptional ? "\n\nparams None leaves them out of the frame." : "";
  for (const m of methods) {
    const data = m.errorData === undefined ? "" : ` (its data a models.${m.errorData} unless the error's own type says otherwise)`;
    lines.push(
      "",
      `    async def ${functionName(m.name)}(self${paramsParameter(m, true)}) -> models.${m.result}:`,
      ...docstring(`${m.name}: ${m.summary}${note(m)}\n\nRaises RpcError when the other end answers with an error${data}.`, "        "),
      `        return cast("models.${m.result}", await self._endpoint.request(${pyString(m.name)}${args(m)}))`,
    );
  }
  for (const n of notifications) {
    lines.push(
      "",
      `    async def notify_${functionName(n.name)}(self${paramsParameter(n, true)}) -> None:`,
      ...docstring(`${n.name}: ${n.summary}${note(n)}`, "        "),
      `        await self._endpoint.notify(${pyString(n.name)}${args(n)})`,
    );
  }
  return lines;
}

/** The module's imports, only those its code reads (the error classes are re-exported). */
function imports(code: string): string[] {
  return [
    "from __future__ import annotations",
    "",
    ...usedImport("collections.abc", ["Awaitable", "Callable"], code),
    ...usedImport("typing", ["Any", "Protocol", "cast"], code),
    "",
    "from . import models",
    "from ._rpc import Endpoint, LocalError, RequestHandler, RpcError",
    "from ._transport import Transport",
    "from ._wire import Mode",
    "from .codec import decode_value",
    "from .registry import PROTOCOL",
  ];
}

/** A module: its header and docstring, the imports its body reads, the body. */
function module(header: string, doc: string, body: readonly string[]): string {
  const code = body.join("\n");
  return [header, doc, "", ...imports(code), "", code].join("\n");
}

export function emitPythonClient(model: ProtocolModel, header: string): string {
  const side = CLIENT;
  const { methods } = received(model, side);
  const table = methods.map((m) =>
    m.params === undefined
      ? `            ${pyString(m.name)}: lambda _params, h=handlers.${functionName(m.name)}: h(),`
      : `            ${pyString(m.name)}: handlers.${functionName(m.name)},`,
  );
  const handlersParam = methods.length ? `handlers: ${side.handlers}` : `handlers: ${side.handlers} | None = None`;
  return module(
    header,
    `"""The client of ${model.title}: a typed method per request it sends, typed handlers for the requests the server sends."""`,
    [
      '__all__ = ["ClientHandlers", "ClientNotifications", "LocalError", "ProtocolClient", "RpcError"]',
      "",
      "",
      ...handlersProtocol(model, side, undefined),
      "",
      "",
      ...notificationsBase(model, side),
      "",
      "",
      ...receivedTable(model, side),
      "",
      "",
      `class ${side.endpoint}:`,
      ...docstring(
        `A connection to a server of ${model.title}.\n\nIncoming messages are validated in \`mode\` (tolerant by default: a newer server's extra fields are kept), outgoing ones strictly. Use it as \`async with ProtocolClient(transport, handlers) as client:\`.`,
        "    ",
      ),
      "",
      "    def __init__(",
      "        self,",
      "        transport: Transport,",
      `        ${handlersParam},`,
      "        *,",
      `        notifications: ${side.notifications} | None = None,`,
      '        mode: Mode = "tolerant",',
      "        validate_outgoing: bool = True,",
      "        on_protocol_error: Callable[[LocalError, str], None] | None = None,",
      "    ) -> None:",
      `        self.notifications = notifications or ${side.notifications}()`,
      ...(methods.length
        ? ["        table: dict[str, RequestHandler] = {", ...table, "        }"]
        : ["        table: dict[str, RequestHandler] = {}"]),
      "        self._endpoint = Endpoint(",
      "            transport,",
      "            PROTOCOL,",
      "            decode_value,",
      `            sends=${pyString(side.sends)},`,
      "            handlers=table,",
      "            on_notification=self.notifications._dispatch,  # pyright: ignore[reportPrivateUsage]",
      "            mode=mode,",
      "            validate_outgoing=validate_outgoing,",
      "            on_protocol_error=on_protocol_error,",
      "        )",
      "",
      `    async def __aenter__(self) -> ${side.endpoint}:`,
      "        self.start()",
      "        return self",
      "",
      "    async def __aexit__(self, *_exc: object) -> None:",
      "        await self.close()",
      "",
      "    def start(self) -> None:",
      '        """Starts reading the server\'s messages."""',
      "        self._endpoint.start()",
      "",
      "    async def close(self) -> None:",
      '        """Closes the transport; requests still waiting fail."""',
      "        await self._endpoint.close()",
      ...senders(model, side),
      "",
    ],
  );
}

export function emitPythonServer(model: ProtocolModel, header: string): string {
  const side = SERVER;
  const { methods } = received(model, side);
  const table = methods.map(
    (m) =>
      `            ${pyString(m.name)}: lambda ${m.params === undefined ? "_params" : "params"}, h=handlers.${functionName(m.name)}: h(${handlerArguments(m, "self")}),`,
  );
  return module(
    header,
    `"""The server side of ${model.title}: typed handlers for every request a client sends, a typed method per request and notification the server sends."""`,
    [
      '__all__ = ["LocalError", "RpcError", "ServerConnection", "ServerHandlers", "ServerNotifications", "serve_connection"]',
      "",
      "",
      ...handlersProtocol(model, side, "connection: ServerConnection"),
      "",
      "",
      ...notificationsBase(model, side),
      "",
      "",
      ...receivedTable(model, side),
      "",
      "",
      `class ${side.endpoint}:`,
      ...docstring(
        "One client's connection: its requests go to the handlers (each given this connection, to notify or ask the client), and the server's own requests and notifications to it go out through the methods below. Incoming messages are validated in `mode` (strict by default), outgoing ones strictly.",
        "    ",
      ),
      "",
      "    def __init__(",
      "        self,",
      "        transport: Transport,",
      `        handlers: ${side.handlers},`,
      "        *,",
      `        notifications: ${side.notifications} | None = None,`,
      '        mode: Mode = "strict",',
      "        validate_outgoing: bool = True,",
      "        on_protocol_error: Callable[[LocalError, str], None] | None = None,",
      "    ) -> None:",
      `        self.notifications = notifications or ${side.notifications}()`,
      ...(methods.length
        ? ["        table: dict[str, RequestHandler] = {", ...table, "        }"]
        : ["        table: dict[str, RequestHandler] = {}"]),
      "        self._endpoint = Endpoint(",
      "            transport,",
      "            PROTOCOL,",
      "            decode_value,",
      `            sends=${pyString(side.sends)},`,
      "            handlers=table,",
      "            on_notification=self.notifications._dispatch,  # pyright: ignore[reportPrivateUsage]",
      "            mode=mode,",
      "            validate_outgoing=validate_outgoing,",
      "            on_protocol_error=on_protocol_error,",
      "        )",
      "",
      "    def start(self) -> None:",
      '        """Starts reading the client\'s messages."""',
      "        self._endpoint.start()",
      "",
      "    async def closed(self) -> None:",
      '        """Returns once the client has gone."""',
      "        await self._endpoint.closed.wait()",
      "",
      "    async def close(self) -> None:",
      "        await self._endpoint.close()",
      ...senders(model, side),
      "",
      "",
      `async def serve_connection(transport: Transport, handlers: ${side.handlers}, *, mode: Mode = "strict", notifications: ${side.notifications} | None = None) -> None:`,
      '    """Serves one client on ``transport`` until it goes."""',
      "    connection = ServerConnection(transport, handlers, mode=mode, notifications=notifications)",
      "    connection.start()",
      "    await connection.closed()",
      "",
    ],
  );
}

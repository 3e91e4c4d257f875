"""One end of a JSON-RPC 2.0 connection, for any protocol and either side: requests out with
their results awaited, requests in answered by handlers, notifications both ways, every message
validated against the protocol (incoming in the chosen mode, outgoing strictly).

Two error families: ``RpcError`` crosses the wire (code, message, data); ``LocalError`` stays
here. In a handler: unknown method -32601, invalid params -32602 with each failing pointer, any
other exception -32603 without its details.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, cast

from ._messages import Direction, ProtocolTables, classify, id_key
from ._transport import Transport
from ._wire import JsonTextError, Mode, ValidationFailed, ValidationIssue, canonical_json, parse_json, to_wire

Decode = Callable[[str, object, Mode], Any]
RequestHandler = Callable[[Any], Awaitable[Any]]
NotificationHandler = Callable[[str, Any], Awaitable[None]]


class RpcError(Exception):
    """An error that crosses the wire: a JSON-RPC error object."""

    def __init__(self, code: int, message: str, data: object = None) -> None:
        super().__init__(f"{message} ({code})")
        self.code = code
        self.message = message
        self.data = data

    def to_wire(self) -> dict[str, object]:
        error: dict[str, object] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error


class LocalError(Exception):
    """An error of this end that is never sent: ``reason`` says what went wrong."""

    def __init__(self, reason: str, message: str, issues: list[ValidationIssue] | None = None) -> None:
        super().__init__(message)
        self.reason = reason
        self.issues = issues or []


def _issues_data(reason: str, issues: list[ValidationIssue]) -> dict[str, object]:
    return {"reason": reason, "errors": [{"pointer": i.pointer, "message": i.message} for i in issues]}


OTHER: dict[Direction, Direction] = {"client_to_server": "server_to_client", "server_to_client": "client_to_server"}


class Endpoint:
    """One end of a connection. ``sends`` is the direction of what this end sends (a client sends client_to_server)."""

    def __init__(
        self,
        transport: Transport,
        protocol: ProtocolTables,
        decode: Decode,
        *,
        sends: Direction,
        handlers: Mapping[str, RequestHandler],
        on_notification: NotificationHandler | None = None,
        mode: Mode = "tolerant",
        validate_outgoing: bool = True,
        on_protocol_error: Callable[[LocalError, str], None] | None = None,
    ) -> None:
        self._transport = transport
        self._protocol = protocol
        self._decode = decode
        self._sends: Direction = sends
        self._handlers = dict(handlers)
        self._on_notification = on_notification
        self._mode: Mode = mode
        self._validate_outgoing = validate_outgoing
        self._on_protocol_error = on_protocol_error
        self._ids = itertools.count(1)
        self._pending: dict[str, tuple[str, asyncio.Future[Any]]] = {}
        self._reader: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self.closed = asyncio.Event()

    def start(self) -> None:
        """Starts reading frames; handlers run as frames arrive."""
        if self._reader is None:
            self._reader = asyncio.get_running_loop().create_task(self._read())

    async def close(self) -> None:
        await self._transport.close()
        if self._reader is not None:
            await asyncio.gather(self._reader, return_exceptions=True)
        self._fail_pending(ConnectionError("the connection closed"))

    def _fail_pending(self, error: BaseException) -> None:
        for _method, future in self._pending.values():
            if not future.done():
                future.set_exception(error)
        self._pending.clear()

    def _outgoing(self, type_name: str, value: object, what: str) -> object:
        wire = to_wire(value)
        if self._validate_outgoing:
            issues = self._protocol.validate(type_name, wire, "strict")
            if issues:
                raise LocalError("invalid_outgoing", f"{what} is not a valid {type_name}: " + "; ".join(f"{i.pointer or '(value)'}: {i.message}" for i in issues), issues)
        return wire

    async def request(self, method: str, params: object) -> Any:
        """Sends a request and returns its decoded result; raises RpcError for an error response."""
        entry = self._protocol.methods.get(method)
        if entry is None or entry.direction not in (self._sends, "both"):
            raise LocalError("unknown_method", f"{method} is not a method this end sends")
        wire = self._outgoing(entry.params, params, f"the params of {method}")
        request_id = next(self._ids)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[id_key(request_id)] = (method, future)
        await self._transport.send(canonical_json({"jsonrpc": "2.0", "id": request_id, "method": method, "params": wire}))
        return await future

    async def notify(self, method: str, params: object) -> None:
        entry = self._protocol.notifications.get(method)
        if entry is None or entry.direction not in (self._sends, "both"):
            raise LocalError("unknown_notification", f"{method} is not a notification this end sends")
        wire = self._outgoing(entry.params, params, f"the params of {method}")
        await self._transport.send(canonical_json({"jsonrpc": "2.0", "method": method, "params": wire}))

    def _protocol_error(self, error: LocalError, frame: str) -> None:
        if self._on_protocol_error is not None:
            self._on_protocol_error(error, frame)

    async def _read(self) -> None:
        try:
            while True:
                text = await self._transport.receive()
                if text is None:
                    break
                try:
                    value = parse_json(text)
                except JsonTextError as error:
                    await self._send_error(None, RpcError(-32700, "Parse error", {"reason": "parse_error"}))
                    self._protocol_error(LocalError("parse_error", str(error)), text)
                    continue
                for message in cast("list[object]", value) if isinstance(value, list) else [value]:
                    self._dispatch(message, text)
        finally:
            self._fail_pending(ConnectionError("the connection closed"))
            self.closed.set()

    def _spawn(self, work: Awaitable[None]) -> None:
        async def run() -> None:
            await work

        task = asyncio.get_running_loop().create_task(run())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _dispatch(self, message: object, frame: str) -> None:
        kind, body, reason = classify(message)
        if kind == "request":
            self._spawn(self._answer(body))
        elif kind == "notification":
            self._spawn(self._notified(body, frame))
        elif kind == "response":
            self._resolve(body, frame)
        else:
            request_id = body.get("id")
            self._spawn(self._send_error(request_id if isinstance(request_id, (str, int)) else None, RpcError(-32600, "Invalid Request", {"reason": "invalid_request", "detail": reason})))

    async def _send_error(self, request_id: object, error: RpcError) -> None:
        await self._transport.send(canonical_json({"jsonrpc": "2.0", "id": request_id, "error": error.to_wire()}))

    async def _answer(self, body: dict[str, object]) -> None:
        method = cast(str, body["method"])
        request_id = body["id"]
        entry = self._protocol.methods.get(method)
        handler = self._handlers.get(method)
        if entry is None or entry.direction == self._sends or handler is None:
            await self._send_error(request_id, RpcError(-32601, "Method not found", {"reason": "method_not_found", "method": method}))
            return
        try:
            params = self._decode(entry.params, body.get("params", {}), self._mode)
        except ValidationFailed as failed:
            await self._send_error(request_id, RpcError(-32602, "Invalid params", _issues_data("invalid_params", failed.issues)))
            return
        try:
            result = await handler(params)
            wire = self._outgoing(entry.result, result, f"the result of {method}")
        except RpcError as error:
            await self._send_error(request_id, error)
            return
        except Exception:  # any other failure: an internal error, without its details
            await self._send_error(request_id, RpcError(-32603, "Internal error", {"reason": "internal_error"}))
            return
        await self._transport.send(canonical_json({"jsonrpc": "2.0", "id": request_id, "result": wire}))

    async def _notified(self, body: dict[str, object], frame: str) -> None:
        method = cast(str, body["method"])
        entry = self._protocol.notifications.get(method)
        if entry is None or entry.direction == self._sends:
            self._protocol_error(LocalError("unknown_notification", f"{method} is not a notification this end receives"), frame)
            return
        try:
            params = self._decode(entry.params, body.get("params", {}), self._mode)
        except ValidationFailed as failed:
            self._protocol_error(LocalError("invalid_incoming", str(failed), failed.issues), frame)
            return
        if self._on_notification is not None:
            await self._on_notification(method, params)

    def _resolve(self, body: dict[str, object], frame: str) -> None:
        pending = self._pending.pop(id_key(body.get("id")), None)
        if pending is None:
            self._protocol_error(LocalError("unknown_response", "a response to no request sent"), frame)
            return
        method, future = pending
        if future.done():
            return
        if "error" in body:
            error = cast("dict[str, Any]", body["error"])
            future.set_exception(RpcError(int(error["code"]), str(error["message"]), error.get("data")))
            return
        try:
            future.set_result(self._decode(self._protocol.methods[method].result, body["result"], self._mode))
        except ValidationFailed as failed:
            local = LocalError("invalid_incoming", str(failed), failed.issues)
            self._protocol_error(local, frame)
            future.set_exception(local)

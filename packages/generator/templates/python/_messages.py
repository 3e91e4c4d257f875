"""JSON-RPC 2.0 messages: how a parsed frame is classified, and a checker of message sequences
against a protocol's tables (a request against its params, a response against the result of the
request with its id, an error against the registry, a notification against its params)."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Literal, NamedTuple, cast

from ._wire import Mode, ValidationIssue, esc, format_number, is_integer

Direction = Literal["client_to_server", "server_to_client", "both"]


class MethodEntry(NamedTuple):
    direction: Direction
    params: str
    result: str
    errors: tuple[str, ...]


class NotificationEntry(NamedTuple):
    direction: Direction
    params: str


class ErrorEntry(NamedTuple):
    code: int
    any_method: bool


class ProtocolTables(NamedTuple):
    """What a checker needs to know of a protocol: its tables and the validation of its types."""

    title: str
    methods: Mapping[str, MethodEntry]
    notifications: Mapping[str, NotificationEntry]
    errors: Mapping[str, ErrorEntry]
    validate: Callable[[str, object, Mode], list[ValidationIssue]]


class Classified(NamedTuple):
    """``kind`` is request, notification, response or invalid; ``reason`` says why a message is invalid."""

    kind: Literal["request", "notification", "response", "invalid"]
    message: dict[str, object]
    reason: str = ""


def is_id(value: object) -> bool:
    if isinstance(value, bool):
        return False
    return isinstance(value, str) or isinstance(value, int) or (isinstance(value, float) and math.isfinite(value))


def classify(value: object) -> Classified:
    """What a parsed message is. Unknown members make a request invalid, as JSON-RPC 2.0 says."""
    if not isinstance(value, dict):
        return Classified("invalid", {}, "a JSON-RPC message must be an object")
    message = cast("dict[str, object]", value)
    if message.get("jsonrpc") != "2.0":
        return Classified("invalid", message, 'jsonrpc must be "2.0"')
    if "id" in message and message["id"] is not None and not is_id(message["id"]):
        return Classified("invalid", message, "id must be a string, a number or null")
    if "method" in message:
        method = message["method"]
        if not isinstance(method, str) or method == "":
            return Classified("invalid", message, "method must be a non-empty string")
        if "params" in message and not isinstance(message["params"], (dict, list)):
            return Classified("invalid", message, "params must be an object or an array")
        for key in message:
            if key not in ("jsonrpc", "id", "method", "params"):
                return Classified("invalid", message, f'unknown member "{key}" in a request')
        if "id" not in message:
            return Classified("notification", message)
        if message["id"] is None:
            return Classified("invalid", message, "a request id must not be null")
        return Classified("request", message)
    if "result" in message or "error" in message:
        if "id" not in message:
            return Classified("invalid", message, "a response must carry an id")
        if "result" in message and "error" in message:
            return Classified("invalid", message, "a response carries result or error, not both")
        if "error" in message:
            error = message["error"]
            if not isinstance(error, dict) or not is_integer(cast("dict[str, object]", error).get("code")) or not isinstance(cast("dict[str, object]", error).get("message"), str):
                return Classified("invalid", message, "error must be an object with an integer code and a string message")
        return Classified("response", message)
    return Classified("invalid", message, "a message needs a method (request or notification) or a result or error (response)")


def id_key(value: object) -> str:
    """A request id as a key: 1 and 1.0 are the same id, "1" another."""
    if isinstance(value, str):
        return f"string:{value}"
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return f"number:{format_number(float(value)) if isinstance(value, float) else value}"
    return "null"


class Finding(NamedTuple):
    """One problem with one message: its index in the input, the part the pointer starts in (params, result, error or "" for the message), the issue."""

    frame: int
    part: Literal["params", "result", "error", ""]
    pointer: str
    message: str


class MessageChecker:
    """Checks messages in order; remembers request ids so that responses are checked against their method's result."""

    def __init__(self, protocol: ProtocolTables, mode: Mode = "strict") -> None:
        self._protocol = protocol
        self._mode: Mode = mode
        self._requests: dict[str, str] = {}
        self._by_code = {entry.code: reason for reason, entry in protocol.errors.items()}

    def check(self, value: object, index: int) -> list[Finding]:
        if isinstance(value, list):
            batch = cast("list[object]", value)
            if not batch:
                return [Finding(index, "", "", "an empty batch is not a valid JSON-RPC message")]
            out: list[Finding] = []
            for i, message in enumerate(batch):
                out.extend(f._replace(pointer=f"/{i}{f.pointer}") if f.part == "" else f for f in self._one(message, index))
            return out
        return self._one(value, index)

    def _issues(self, issues: list[ValidationIssue], part: Literal["params", "result", "error"], index: int) -> list[Finding]:
        return [Finding(index, part, i.pointer, i.message) for i in issues]

    def _one(self, value: object, index: int) -> list[Finding]:
        kind, message, reason = classify(value)
        protocol = self._protocol
        if kind == "invalid":
            return [Finding(index, "", "", f"not a valid JSON-RPC 2.0 message: {reason}")]
        if kind in ("request", "notification"):
            method = cast(str, message["method"])
            params = message.get("params")
            if kind == "request":
                entry = protocol.methods.get(method)
                if entry is None:
                    return [Finding(index, "", "/method", "is not a method of the protocol")]
                self._requests[id_key(message["id"])] = method
                type_name = entry.params
            else:
                note = protocol.notifications.get(method)
                if note is None:
                    return [Finding(index, "", "/method", "is not a notification of the protocol")]
                type_name = note.params
            return self._issues(protocol.validate(type_name, {} if params is None else params, self._mode), "params", index)
        response_id = message["id"]
        method = None if response_id is None else self._requests.get(id_key(response_id))
        if "error" in message:
            error = cast("dict[str, object]", message["error"])
            code = error["code"]
            registered = self._by_code.get(cast(int, code))
            data = error.get("data")
            named = cast("dict[str, object]", data).get("reason") if isinstance(data, dict) else None
            if isinstance(named, str) and named in protocol.errors and protocol.errors[named].code != code:
                return [Finding(index, "error", "/code", f'does not match the registered code {protocol.errors[named].code} of reason "{named}"')]
            if registered is not None and isinstance(named, str) and named != registered and named not in protocol.errors:
                return [Finding(index, "error", "/data/reason", "is not an error reason of the protocol")]
            if registered is None and (cast(float, code) > -32000 or cast(float, code) < -32768):
                return []
            if registered is None:
                return [Finding(index, "error", "/code", "is not in the error registry")]
            if method is not None and not protocol.errors[registered].any_method and registered not in protocol.methods[method].errors:
                return [Finding(index, "error", "/code", f'"{registered}" is not an error {method} is registered to return')]
            return []
        if method is None:
            return [Finding(index, "", "/id", "answers no request seen earlier in the input")]
        return self._issues(protocol.validate(protocol.methods[method].result, message["result"], self._mode), "result", index)


def finding_pointer(finding: Finding) -> str:
    """The finding's pointer into the whole message: ``/params/…``, ``/result/…``, ``/error/…`` or one on the envelope."""
    return finding.pointer if finding.part == "" else f"/{esc(finding.part)}{finding.pointer}"

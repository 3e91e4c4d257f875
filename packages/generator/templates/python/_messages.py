"""JSON-RPC 2.0 messages: how a parsed frame is classified, and a checker of message sequences
against a protocol's tables (a request against its params, a response against the result of the
request with its id, an error against the registry, a notification against its params)."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Final, Literal, NamedTuple, cast

from ._wire import Mode, ValidationIssue, esc, format_number, is_integer

Direction = Literal["client_to_server", "server_to_client", "both"]

ParamStructure = Literal["by-name", "by-position", "either"]
"""How params are sent: a JSON object, a JSON array, or either (an array gives the named params in order)."""


class MethodEntry(NamedTuple):
    direction: Direction
    params: str | None
    """The params' type; None when the method takes no params."""
    result: str
    errors: tuple[str, ...]
    params_optional: bool = False
    """The frame may leave params out."""
    param_structure: ParamStructure = "by-name"
    param_names: tuple[str, ...] | None = None
    """For "either": the names of the params in the order of their positions."""
    error_data: str | None = None
    """The type of error.data of any error the method answers with."""


class NotificationEntry(NamedTuple):
    direction: Direction
    params: str | None
    params_optional: bool = False
    param_structure: ParamStructure = "by-name"
    param_names: tuple[str, ...] | None = None


class ErrorEntry(NamedTuple):
    code: int
    any_method: bool
    data: str | None = None
    """The type of the error's data, when errors.json gives it one."""


class ParamsRefused(ValueError):
    """Params whose presence or structure the message does not allow (before their schema is read)."""


LEFT_OUT: Final = object()
"""A frame without params (``None`` is JSON's null)."""


def read_params(entry: MethodEntry | NotificationEntry, raw: object) -> object:
    """The params as their schema reads them: ``None`` when the frame leaves them out (and may),
    the named form of positional params of an "either" message; raises ParamsRefused otherwise.
    ``raw`` is the frame's params, or ``LEFT_OUT`` when it has none."""
    if entry.params is None:
        if raw is not LEFT_OUT:
            raise ParamsRefused("must be left out: the message takes no params")
        return None
    if raw is LEFT_OUT:
        if entry.params_optional:
            return None
        raise ParamsRefused("are required: the message may not leave its params out")
    is_array = isinstance(raw, list)
    is_object = isinstance(raw, dict)
    if entry.param_structure == "by-name" and not is_object:
        raise ParamsRefused("must be a JSON object (params by name)" + (", not an array" if is_array else ""))
    if entry.param_structure == "by-position" and not is_array:
        raise ParamsRefused("must be a JSON array (params by position)")
    # From here on the params are an object or an array (any other value is refused below).
    value = cast("list[object] | dict[str, object]", raw)
    if entry.param_structure == "either":
        if is_object:
            return value
        if not is_array:
            raise ParamsRefused("must be a JSON object (by name) or a JSON array (by position)")
        values = cast("list[object]", value)
        if entry.param_names is None:
            return values
        if len(values) > len(entry.param_names):
            raise ParamsRefused(f"has {len(values)} positions; the message takes at most {len(entry.param_names)} ({', '.join(entry.param_names)})")
        return dict(zip(entry.param_names, values))
    return value


def wire_params(entry: MethodEntry | NotificationEntry, params: object) -> object:
    """The params as a frame carries them: an "either" message's named params by position (trailing
    absent ones left out), anything else as it is."""
    if entry.param_structure != "either" or entry.param_names is None or not isinstance(params, dict):
        return params
    named = cast("dict[str, object]", params)
    values = [named.get(name, LEFT_OUT) for name in entry.param_names]
    while values and values[-1] is LEFT_OUT:
        values.pop()
    for name, value in zip(entry.param_names, values):
        if value is LEFT_OUT:
            raise ValueError(f'param "{name}" is left out but a later one is given; by position it cannot be skipped')
    return values



class ProtocolTables(NamedTuple):
    """What a checker needs to know of a protocol: its tables and the validation of its types."""

    title: str
    methods: Mapping[str, MethodEntry]
    notifications: Mapping[str, NotificationEntry]
    errors: Mapping[str, ErrorEntry]
    validate: Callable[[str, object, Mode], list[ValidationIssue]]
    batches: bool = True
    """Whether a frame may be a JSON-RPC batch."""


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
            out: list[Finding] = []
            if not self._protocol.batches:
                out.append(Finding(index, "", "", "is a batch, and the protocol does not allow JSON-RPC batches"))
            if not batch:
                return [*out, Finding(index, "", "", "an empty batch is not a valid JSON-RPC message")]
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
            entry: MethodEntry | NotificationEntry | None
            if kind == "request":
                entry = protocol.methods.get(method)
                if entry is None:
                    return [Finding(index, "", "/method", "is not a method of the protocol")]
                self._requests[id_key(message["id"])] = method
            else:
                entry = protocol.notifications.get(method)
                if entry is None:
                    return [Finding(index, "", "/method", "is not a notification of the protocol")]
            try:
                params = read_params(entry, message.get("params", LEFT_OUT))
            except ParamsRefused as refused:
                return [Finding(index, "params", "", str(refused))]
            if params is None or entry.params is None:
                return []
            return self._issues(protocol.validate(entry.params, params, self._mode), "params", index)
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
            # The error's own data type, else the one the method gives every error it answers with.
            data_type = (protocol.errors[registered].data if registered is not None else None) or (protocol.methods[method].error_data if method is not None else None)
            if registered is not None and data_type is None and isinstance(named, str) and named != registered and named not in protocol.errors:
                return [Finding(index, "error", "/data/reason", "is not an error reason of the protocol")]
            if registered is None and (cast(float, code) > -32000 or cast(float, code) < -32768):
                return []
            if registered is None:
                return [Finding(index, "error", "/code", "is not in the error registry")]
            found: list[Finding] = []
            if method is not None and not protocol.errors[registered].any_method and registered not in protocol.methods[method].errors:
                found.append(Finding(index, "error", "/code", f'"{registered}" is not an error {method} is registered to return'))
            if data_type is not None:
                if "data" not in error:
                    if protocol.errors[registered].data is not None:
                        found.append(Finding(index, "error", "/data", f'is missing: error "{registered}" carries data of type {data_type}'))
                else:
                    found.extend(Finding(index, "error", f"/data{i.pointer}", i.message) for i in protocol.validate(data_type, error["data"], self._mode))
            return found
        if method is None:
            return [Finding(index, "", "/id", "answers no request seen earlier in the input")]
        return self._issues(protocol.validate(protocol.methods[method].result, message["result"], self._mode), "result", index)


def finding_pointer(finding: Finding) -> str:
    """The finding's pointer into the whole message: ``/params/…``, ``/result/…``, ``/error/…`` or one on the envelope."""
    return finding.pointer if finding.part == "" else f"/{esc(finding.part)}{finding.pointer}"

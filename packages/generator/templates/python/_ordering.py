"""The engine behind a generated ordering checker: a protocol's ordering rules (data from
protocol.json) enforced on a stream of JSON-RPC frames seen from one end of a connection.

- ``precedes``: within a scope, ``first`` comes before every notification of ``then``.
- ``leads``: ``notification`` comes at most once, and before every notification of ``before``.
- ``trails``: ``notification`` comes at most once, and no notification of ``after`` follows it.
- ``single_terminal``: a scope ends with exactly one of ``terminals``; nothing of ``after`` follows.
- ``quiet_after``: after ``notification``, nothing of ``quiet`` until a request of ``until`` for the
  same scope gets a successful response.
- ``paired``: every ``open`` is followed by exactly one ``close`` with the same key.
- ``sequence``: ``field`` of the scope's notifications (and of the items of listed method
  results) goes up by exactly one each time.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple, cast

from ._messages import Direction, classify, id_key

OrderingRule = Mapping[str, Any]
"""One rule as protocol.json declares it, scope keys resolved to pointers."""

OTHER_SIDE: dict[Direction, Direction] = {"server_to_client": "client_to_server", "client_to_server": "server_to_client"}


class OrderingViolation(NamedTuple):
    rule: str
    requirement: str
    message: str
    frame_index: int


@dataclass(frozen=True)
class _At:
    index: int


class _Scope(NamedTuple):
    key: tuple[object, ...]
    label: str


_MISSING = object()


def value_at(root: object, pointer: str) -> object:
    """The value at a JSON pointer, or a marker object when nothing is there."""
    if pointer == "":
        return root
    current = root
    for raw in pointer[1:].split("/"):
        token = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(current, dict) and token in current:
            current = cast("dict[str, object]", current)[token]
        elif isinstance(current, list) and token.isdigit() and int(token) < len(cast("list[object]", current)):
            current = cast("list[object]", current)[int(token)]
        else:
            return _MISSING
    return current


def _is_key(value: object) -> bool:
    return isinstance(value, (str, int, float)) and not isinstance(value, bool)


def _scope_of(parts: Sequence[Mapping[str, str]], params: object) -> _Scope | None:
    values: list[object] = []
    for part in parts:
        value = value_at(params, part["pointer"])
        if not _is_key(value):
            return None
        values.append(value)
    label = " of ".join(f"{part['name']} {json.dumps(value)}" for part, value in reversed(list(zip(parts, values))))
    return _Scope(tuple(("s", v) if isinstance(v, str) else ("n", v) for v in values), label)


def _scope_id(parts: Sequence[Mapping[str, str]]) -> str:
    return json.dumps([p["pointer"] for p in parts])


Report = Callable[[str, _At], None]


@dataclass
class _Check:
    """What a rule does with each kind of message."""

    notification: Callable[[str, object, _At], None] | None = None
    request: Callable[[str, object, str], None] | None = None
    response: Callable[[tuple[str, object], str, bool, object, _At], None] | None = None
    end: Callable[[Callable[[Sequence[Mapping[str, str]], tuple[object, ...]], bool]], None] | None = None


def _precedes(rule: OrderingRule, report: Report) -> _Check:
    then = set(rule["then"])
    opened: set[tuple[object, ...]] = set()

    def notification(method: str, params: object, at: _At) -> None:
        scope = _scope_of(rule["scope"], params)
        if scope is None:
            return
        if method == rule["first"]:
            opened.add(scope.key)
        elif method in then and scope.key not in opened:
            report(f"{method} for {scope.label} at frame {at.index} came before its {rule['first']}", at)

    return _Check(notification=notification)


def _leads(rule: OrderingRule, report: Report) -> _Check:
    before = set(rule["before"])
    led: dict[tuple[object, ...], _At] = {}
    followed: dict[tuple[object, ...], tuple[str, _At]] = {}

    def notification(method: str, params: object, at: _At) -> None:
        if method != rule["notification"] and method not in before:
            return
        scope = _scope_of(rule["scope"], params)
        if scope is None:
            return
        if method != rule["notification"]:
            followed.setdefault(scope.key, (method, at))
            return
        earlier = led.get(scope.key)
        other = followed.get(scope.key)
        if earlier is not None:
            report(f"{method} for {scope.label} at frame {at.index} is a second one: it already came at frame {earlier.index}", at)
        elif other is not None:
            report(f"{method} for {scope.label} at frame {at.index} came after {other[0]} at frame {other[1].index}; it must come first", at)
        if earlier is None:
            led[scope.key] = at

    return _Check(notification=notification)


def _trails(rule: OrderingRule, report: Report) -> _Check:
    after = set(rule["after"])
    trailed: dict[tuple[object, ...], _At] = {}
    overtaken: set[tuple[object, ...]] = set()

    def notification(method: str, params: object, at: _At) -> None:
        if method != rule["notification"] and method not in after:
            return
        scope = _scope_of(rule["scope"], params)
        if scope is None:
            return
        earlier = trailed.get(scope.key)
        if method != rule["notification"]:
            if earlier is not None and scope.key not in overtaken:
                overtaken.add(scope.key)
                report(
                    f"{method} for {scope.label} at frame {at.index} came after {rule['notification']} at frame {earlier.index}; "
                    f"{rule['notification']} must come after it",
                    at,
                )
            return
        if earlier is not None:
            report(f"{method} for {scope.label} at frame {at.index} is a second one: it already came at frame {earlier.index}", at)
        else:
            trailed[scope.key] = at

    return _Check(notification=notification)


def _single_terminal(rule: OrderingRule, report: Report, terminated: dict[str, set[tuple[object, ...]]]) -> _Check:
    terminals = set(rule["terminals"])
    after = set(rule["after"])
    seen: dict[tuple[object, ...], tuple[str, _At]] = {}
    ended: dict[tuple[object, ...], tuple[str, _At]] = {}
    ids = terminated.setdefault(_scope_id(rule["scope"]), set())

    def notification(method: str, params: object, at: _At) -> None:
        if method not in terminals and method not in after:
            return
        scope = _scope_of(rule["scope"], params)
        if scope is None:
            return
        seen.setdefault(scope.key, (scope.label, at))
        end = ended.get(scope.key)
        if end is not None and method in terminals:
            report(f"{method} for {scope.label} at frame {at.index} is a second terminal notification: {end[0]} at frame {end[1].index} already ended it", at)
        elif end is not None:
            report(f"{method} for {scope.label} at frame {at.index} came after {end[0]} at frame {end[1].index} had ended it", at)
        elif method in terminals:
            ended[scope.key] = (method, at)
            ids.add(scope.key)

    def end(open_: Callable[[Sequence[Mapping[str, str]], tuple[object, ...]], bool]) -> None:
        for key, (label, at) in seen.items():
            if key in ended or open_(rule["scope"], key):
                continue
            report(f"{label}, first seen at frame {at.index}, has no terminal notification ({' or '.join(rule['terminals'])}) by the end of the stream", at)

    return _Check(notification=notification, end=end)


@dataclass
class _Quiet:
    since: _At
    pending: set[str] = field(default_factory=lambda: set[str]())
    held: list[tuple[str, str, _At]] = field(default_factory=lambda: list[tuple[str, str, _At]]())


def _quiet_after(rule: OrderingRule, report: Report) -> _Check:
    quiet = set(rule["quiet"])
    until = set(rule["until"])
    quieted: dict[tuple[object, ...], _Quiet] = {}

    def message(method: str, label: str, at: _At, since: _At) -> str:
        return f"{method} for {label} at frame {at.index} came after {rule['notification']} at frame {since.index} and before a successful {' or '.join(rule['until'])}"

    def release(state: _Quiet) -> None:
        for method, label, at in state.held:
            report(message(method, label, at, state.since), at)
        state.held = []

    def notification(method: str, params: object, at: _At) -> None:
        scope = _scope_of(rule["scope"], params)
        if scope is None:
            return
        state = quieted.get(scope.key)
        if state is not None and method in quiet:
            if state.pending:
                state.held.append((method, scope.label, at))
            else:
                report(message(method, scope.label, at, state.since), at)
        if method == rule["notification"] and state is None:
            quieted[scope.key] = _Quiet(at)

    def request(method: str, params: object, request_id: str) -> None:
        if method not in until:
            return
        scope = _scope_of(rule["scope"], params)
        if scope is not None and scope.key in quieted:
            quieted[scope.key].pending.add(request_id)

    def response(request: tuple[str, object], request_id: str, ok: bool, _result: object, _at: _At) -> None:
        if request[0] not in until:
            return
        scope = _scope_of(rule["scope"], request[1])
        state = quieted.get(scope.key) if scope is not None else None
        if scope is None or state is None or request_id not in state.pending:
            return
        state.pending.discard(request_id)
        if ok:
            del quieted[scope.key]
        elif not state.pending:
            release(state)

    def end(_open: Callable[[Sequence[Mapping[str, str]], tuple[object, ...]], bool]) -> None:
        for state in quieted.values():
            release(state)

    return _Check(notification=notification, request=request, response=response, end=end)


@dataclass
class _Pair:
    scope: _Scope
    label: str
    opened: _At
    closed: _At | None = None


def _paired(rule: OrderingRule, report: Report) -> _Check:
    pairs: dict[tuple[object, ...], _Pair] = {}
    opening, closing = rule["open"], rule["close"]

    def key_of(params: object, pointer: str) -> tuple[_Scope, tuple[object, ...], str] | None:
        scope = _scope_of(rule["scope"], params)
        value = value_at(params, pointer)
        if scope is None or not _is_key(value):
            return None
        return scope, (scope.key, ("s", value) if isinstance(value, str) else ("n", value)), f"{rule['subject']} {json.dumps(value)} of {scope.label}"

    def notification(method: str, params: object, at: _At) -> None:
        if method == opening["notification"]:
            found = key_of(params, opening["key"])
            if found is None:
                return
            pair = pairs.get(found[1])
            if pair is not None:
                report(f"{method} for {found[2]} at frame {at.index} opened it a second time (first at frame {pair.opened.index})", at)
            else:
                pairs[found[1]] = _Pair(found[0], found[2], at)
        elif method == closing["notification"]:
            found = key_of(params, closing["key"])
            if found is None:
                return
            pair = pairs.get(found[1])
            if pair is None:
                report(f"{method} for {found[2]} at frame {at.index} came before its {opening['notification']}", at)
            elif pair.closed is not None:
                report(f"{method} for {found[2]} at frame {at.index} closed it a second time (first at frame {pair.closed.index})", at)
            else:
                pair.closed = at

    def end(open_: Callable[[Sequence[Mapping[str, str]], tuple[object, ...]], bool]) -> None:
        for pair in pairs.values():
            if pair.closed is not None or open_(rule["scope"], pair.scope.key):
                continue
            report(f"{pair.label}, opened by {opening['notification']} at frame {pair.opened.index}, never got its {closing['notification']}", pair.opened)

    return _Check(notification=notification, end=end)


def _is_int(value: object) -> bool:
    return (isinstance(value, int) and not isinstance(value, bool)) or (isinstance(value, float) and value.is_integer())


def _sequence(rule: OrderingRule, report: Report) -> _Check:
    notifications = set(rule["notifications"])
    last: dict[tuple[object, ...], tuple[float, _At]] = {}

    def notification(method: str, params: object, at: _At) -> None:
        if method not in notifications:
            return
        scope = _scope_of(rule["scope"], params)
        value = value_at(params, rule["field"])
        if scope is None or not _is_int(value):
            return
        number = cast(float, value)
        previous = last.get(scope.key)
        if previous is not None and number != previous[0] + 1:
            report(f"{method} for {scope.label} at frame {at.index} has {rule['field']} {value}; expected {previous[0] + 1} after {previous[0]} at frame {previous[1].index}", at)
        last[scope.key] = (number, at)

    def response(request: tuple[str, object], _id: str, ok: bool, result: object, at: _At) -> None:
        source = next((r for r in rule.get("results", ()) if r["method"] == request[0]), None) if ok else None
        if source is None:
            return
        items = value_at(result, source["items"])
        if not isinstance(items, list):
            return
        scope = _scope_of(rule["scope"], request[1])
        whose = f" for {scope.label}" if scope is not None else ""
        previous: float | None = None
        for i, item in enumerate(cast("list[object]", items)):
            value = value_at(item, rule["field"])
            if not _is_int(value):
                continue
            number = cast(float, value)
            if previous is not None and number != previous + 1:
                report(f"{request[0]} result{whose} at frame {at.index}: {source['items']}/{i}{rule['field']} is {value}; expected {previous + 1} after {previous}", at)
            previous = number

    return _Check(notification=notification, response=response)


class OrderingChecker:
    """Feed it every frame in the order seen, with who sent it; it returns the violations each frame makes."""

    def __init__(self, rules: Sequence[OrderingRule]) -> None:
        self.violations: list[OrderingViolation] = []
        self._fresh: list[OrderingViolation] = []
        self._terminated: dict[str, set[tuple[object, ...]]] = {}
        self._pending: dict[str, tuple[str, object]] = {}
        self._index = 0
        self._ended = False
        self._checks = [self._check_of(rule) for rule in rules]

    def _check_of(self, rule: OrderingRule) -> _Check:
        def report(message: str, at: _At) -> None:
            self._fresh.append(OrderingViolation(rule["id"], rule["requirement"], message, at.index))

        kind: Literal["precedes", "leads", "trails", "single_terminal", "quiet_after", "paired", "sequence"] = rule["kind"]
        if kind == "precedes":
            return _precedes(rule, report)
        if kind == "leads":
            return _leads(rule, report)
        if kind == "trails":
            return _trails(rule, report)
        if kind == "single_terminal":
            return _single_terminal(rule, report, self._terminated)
        if kind == "quiet_after":
            return _quiet_after(rule, report)
        if kind == "paired":
            return _paired(rule, report)
        return _sequence(rule, report)

    def _take(self) -> list[OrderingViolation]:
        found, self._fresh = self._fresh, []
        self.violations.extend(found)
        return found

    def _one(self, message: object, direction: Direction, at: _At) -> None:
        kind, body, _reason = classify(message)
        if kind == "notification":
            for check in self._checks:
                if check.notification is not None:
                    check.notification(cast(str, body["method"]), body.get("params"), at)
        elif kind == "request":
            key = f"{direction} {id_key(body['id'])}"
            self._pending[key] = (cast(str, body["method"]), body.get("params"))
            for check in self._checks:
                if check.request is not None:
                    check.request(cast(str, body["method"]), body.get("params"), key)
        elif kind == "response":
            key = f"{OTHER_SIDE[direction]} {id_key(body['id'])}"
            request = self._pending.pop(key, None)
            if request is None:
                return
            ok = "result" in body
            for check in self._checks:
                if check.response is not None:
                    check.response(request, key, ok, body.get("result"), at)

    def accept(self, frame: object, direction: Direction) -> list[OrderingViolation]:
        """Feeds one parsed frame (a message or a batch); returns the violations it makes."""
        at = _At(self._index)
        self._index += 1
        for message in cast("list[object]", frame) if isinstance(frame, list) else [frame]:
            self._one(message, direction, at)
        return self._take()

    def end(self, open_turns_allowed: bool = False) -> list[OrderingViolation]:
        """End of the stream: what can only be judged there (a scope with no terminal, a pair never closed)."""
        if self._ended:
            return []
        self._ended = True

        def is_open(scope: Sequence[Mapping[str, str]], key: tuple[object, ...]) -> bool:
            return open_turns_allowed and key not in self._terminated.get(_scope_id(scope), set())

        for check in self._checks:
            if check.end is not None:
                check.end(is_open)
        return self._take()

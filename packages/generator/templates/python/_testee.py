"""The contract testee: answers the harness's commands, one JSON object per line in and one per
line out (docs/languages.md, "The testee protocol"), with the package's own decoder, encoder,
validators, message checker and ordering rules. Every generated language speaks the same lines.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any, cast

from ._messages import Direction, MessageChecker, ProtocolTables, finding_pointer
from ._ordering import OrderingChecker
from ._wire import JsonTextError, Mode, ValidationFailed, canonical_json, encode, parse_json


def _utf16(text: str) -> bytes:
    return text.encode("utf-16-be", "surrogatepass")


def _pointers(pointers: list[str]) -> list[str]:
    return sorted(set(pointers), key=_utf16)


def answer(
    command: dict[str, Any],
    protocol: ProtocolTables,
    decode: Callable[[str, str, Mode], object],
    ordering: Callable[[], OrderingChecker],
) -> dict[str, object]:
    """The answer to one command, without its id."""
    op = command.get("op")
    mode: Mode = "tolerant" if command.get("mode") == "tolerant" else "strict"
    try:
        if op == "hello":
            return {"language": "python", "protocol": protocol.title}
        if op == "validate":
            issues = protocol.validate(str(command["type"]), parse_json(command["json"]), mode)
            return {"valid": not issues, "pointers": _pointers([i.pointer for i in issues])}
        if op == "roundtrip":
            try:
                value = decode(str(command["type"]), command["json"], mode)
            except ValidationFailed as failed:
                return {"ok": False, "pointers": _pointers([i.pointer for i in failed.issues])}
            return {"ok": True, "json": encode(value)}
        if op == "encode":
            try:
                return {"json": canonical_json(parse_json(command["json"]))}
            except ValueError as error:
                return {"unencodable": str(error)}
        if op == "messages":
            checker = MessageChecker(protocol, mode)
            findings: list[dict[str, object]] = []
            seen: set[tuple[int, str]] = set()
            for index, frame in enumerate(cast("list[str]", command.get("frames", []))):
                for finding in checker.check(parse_json(frame), index):
                    pointer = finding_pointer(finding)
                    if (index, pointer) not in seen:
                        seen.add((index, pointer))
                        findings.append({"frame": index, "pointer": pointer})
            findings.sort(key=lambda f: (cast(int, f["frame"]), _utf16(cast(str, f["pointer"]))))
            return {"findings": findings}
        if op == "ordering":
            engine = ordering()
            violations: list[dict[str, object]] = []
            for frame in cast("list[dict[str, str]]", command.get("frames", [])):
                direction = cast(Direction, frame["from"])
                violations.extend({"frame": v.frame_index, "rule": v.rule} for v in engine.accept(parse_json(frame["json"]), direction))
            violations.extend({"frame": None, "rule": v.rule} for v in engine.end())
            return {"violations": violations}
        return {"unsupported": f'no command "{op}"'}
    except JsonTextError as error:
        return {"parse_error": str(error)}
    except KeyError as error:
        return {"unsupported": f"not known here: {error}"}


def serve_testee(
    protocol: ProtocolTables,
    decode: Callable[[str, str, Mode], object],
    ordering: Callable[[], OrderingChecker],
) -> None:
    """Reads commands from standard input until it ends, one answer line each on standard output."""
    stdin = sys.stdin.buffer
    stdout = sys.stdout
    for raw in stdin:
        line = raw.decode("utf-8").strip()
        if not line:
            continue
        try:
            command = cast("dict[str, Any]", json.loads(line))
        except ValueError as error:
            stdout.write(json.dumps({"id": None, "bad_command": str(error)}) + "\n")
            continue
        reply = {"id": command.get("id"), **answer(command, protocol, decode, ordering)}
        stdout.write(json.dumps(reply, ensure_ascii=True) + "\n")
        stdout.flush()

"""The tools the model is offered — ``shell``, ``write_file`` and ``read_file``, the reference
tools of ``turnspec certify`` (docs/certify-contract.md) — and how each one runs. Paths are
relative to the thread's folder and may not leave it.
"""

from __future__ import annotations

import asyncio
import codecs
import json
import os
import signal
import time
from collections.abc import Awaitable, Callable, Mapping
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal

from pydantic import JsonValue

from agent_gateway.models import PermissionActionKind

OutputStream = Literal["stdout", "stderr"]


class ToolArgumentError(Exception):
    """A call whose arguments the tool refuses before running; the message goes back to the model."""


@dataclass(frozen=True)
class Argument:
    name: str
    kind: Literal["string", "integer"]
    description: str
    required: bool = True


@dataclass(frozen=True)
class ToolSpec:
    """A tool as the model is offered it, and the kind of action the permission policy judges it as."""

    name: str
    action: PermissionActionKind
    description: str
    arguments: tuple[Argument, ...]

    def offered(self) -> dict[str, JsonValue]:
        """The tool in the request to the model."""
        properties: dict[str, JsonValue] = {a.name: {"type": a.kind, "description": a.description} for a in self.arguments}
        required: list[JsonValue] = [a.name for a in self.arguments if a.required]
        parameters: dict[str, JsonValue] = {"type": "object", "properties": properties, "required": required, "additionalProperties": False}
        return {"type": "function", "function": {"name": self.name, "description": self.description, "parameters": parameters}}

    def parse(self, text: str) -> dict[str, JsonValue]:
        """The call's arguments from the JSON text the model sent, or ToolArgumentError naming what is wrong."""
        try:
            value: JsonValue = json.loads(text or "{}")
        except ValueError as error:
            raise ToolArgumentError(f"{self.name}: the arguments are not JSON: {error}") from error
        if not isinstance(value, dict):
            raise ToolArgumentError(f"{self.name}: the arguments must be a JSON object")
        return value

    def check(self, args: Mapping[str, JsonValue]) -> None:
        """Refuses arguments the tool does not have, and missing or mistyped ones."""
        known = {a.name: a for a in self.arguments}
        for name in args:
            if name not in known:
                raise ToolArgumentError(f"{self.name}: there is no argument {name!r}; the arguments are {', '.join(known)}")
        for argument in self.arguments:
            value = args.get(argument.name)
            if value is None:
                if argument.required:
                    raise ToolArgumentError(f"{self.name}: the argument {argument.name!r} is missing")
                continue
            if argument.kind == "string" and not isinstance(value, str):
                raise ToolArgumentError(f"{self.name}: the argument {argument.name!r} must be a string")
            if argument.kind == "integer" and (isinstance(value, bool) or not isinstance(value, int) or value <= 0):
                raise ToolArgumentError(f"{self.name}: the argument {argument.name!r} must be a positive integer")


SHELL: Final = ToolSpec(
    "shell",
    "shell_command",
    "Runs a POSIX shell command in the thread's folder and returns its standard output.",
    (
        Argument("command", "string", "the command line"),
        Argument("timeout_ms", "integer", "stop the command after this many milliseconds", required=False),
    ),
)
WRITE_FILE: Final = ToolSpec(
    "write_file",
    "file_write",
    "Writes a file in the thread's folder, replacing what was there.",
    (Argument("path", "string", "the file, relative to the thread's folder"), Argument("content", "string", "the whole new content")),
)
READ_FILE: Final = ToolSpec(
    "read_file",
    "file_read",
    "Returns the content of a file in the thread's folder.",
    (Argument("path", "string", "the file, relative to the thread's folder"),),
)
TOOLS: Final[Mapping[str, ToolSpec]] = {t.name: t for t in (SHELL, WRITE_FILE, READ_FILE)}


def inside(folder: str, path: str) -> Path:
    """``path`` resolved against the thread's folder; ToolArgumentError when it leads out of it."""
    root = Path(folder).resolve()
    full = (root / path).resolve()
    if not full.is_relative_to(root):
        raise ToolArgumentError(f"{path} is outside the thread's folder {root}")
    return full


def write_inside(folder: str, path: str, content: str) -> tuple[Path, Literal["add", "modify"]]:
    """Writes the file; says whether it was created or replaced."""
    full = inside(folder, path)
    existed = full.exists()
    try:
        full.parent.mkdir(parents=True, exist_ok=True)
        full.write_text(content, encoding="utf-8")
    except OSError as error:
        raise ToolArgumentError(f"write_file: cannot write {path}: {error.strerror}") from error
    return full, "modify" if existed else "add"


def read_inside(folder: str, path: str) -> str:
    full = inside(folder, path)
    try:
        return full.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise ToolArgumentError(f"read_file: cannot read {path}: {error}") from error


@dataclass(frozen=True)
class CommandResult:
    exit_code: int | None
    """None when the command was killed (at its timeout)."""
    stdout: str
    stderr: str
    duration_ms: int
    timed_out: bool


async def run_command(command: str, cwd: str, on_output: Callable[[OutputStream, str], Awaitable[None]], *, timeout_ms: int | None = None) -> CommandResult:
    """Runs ``command`` with ``sh -c`` in ``cwd``, handing each piece of its output to ``on_output``
    as it comes. The command runs in a process group of its own, so that stopping it (at its
    timeout, or when the caller is cancelled) stops what it started too (``sleep`` under ``sh``)."""
    started = time.monotonic()
    spawning = asyncio.ensure_future(
        asyncio.create_subprocess_exec(
            "/bin/sh", "-c", command, cwd=cwd, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, start_new_session=True
        )
    )
    try:
        # Shielded: cancelled while it starts, asyncio would kill the shell alone and then wait
        # for the pipes its children still hold. It is let start, then stopped whole below.
        process = await asyncio.shield(spawning)
    except asyncio.CancelledError:
        await _stop(await spawning)
        raise
    collected: dict[OutputStream, list[str]] = {"stdout": [], "stderr": []}

    async def pump(stream: asyncio.StreamReader | None, name: OutputStream) -> None:
        if stream is None:
            return
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        while chunk := await stream.read(65536):
            if text := decoder.decode(chunk):
                collected[name].append(text)
                await on_output(name, text)
        if tail := decoder.decode(b"", final=True):
            collected[name].append(tail)
            await on_output(name, tail)

    timed_out = False
    try:
        async with asyncio.timeout(None if timeout_ms is None else timeout_ms / 1000):
            await asyncio.gather(pump(process.stdout, "stdout"), pump(process.stderr, "stderr"))
            await process.wait()
    except TimeoutError:
        timed_out = True
    finally:
        await _stop(process)
    return CommandResult(
        None if timed_out else process.returncode,
        "".join(collected["stdout"]),
        "".join(collected["stderr"]),
        round((time.monotonic() - started) * 1000),
        timed_out,
    )


async def _stop(process: asyncio.subprocess.Process) -> None:
    """Kills the command's process group, if it still runs, and waits for it (and its pipes) to end."""
    if process.returncode is None:
        with suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
    # asyncio's wait() returns once the pipes are closed too: what is left in them is read and dropped.
    for stream in (process.stdout, process.stderr):
        if stream is not None:
            while await stream.read(65536):
                pass
    await process.wait()

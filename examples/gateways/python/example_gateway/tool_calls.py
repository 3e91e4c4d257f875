"""One tool call of the model, as the turn shows it: its item opened, the permission asked
for, the tool run, the item completed, and the text the model is told."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Literal

from pydantic import JsonValue

from agent_gateway import models

from .permissions import PermissionGate
from .provider import ToolCallRequest
from .tools import READ_FILE, SHELL, TOOLS, WRITE_FILE, ToolArgumentError, inside, read_inside, run_command, write_inside
from .turn_stream import TurnStream


def _text(args: dict[str, JsonValue], name: str) -> str:
    value = args.get(name)
    return value if isinstance(value, str) else ""


@dataclass
class ToolCalls:
    """Runs the tool calls of one turn."""

    stream: TurnStream
    gate: PermissionGate
    cwd: str

    async def run(self, call: ToolCallRequest, round_: int) -> str:
        """Runs the call; returns what the model is told (its result, or why it failed or did not run)."""
        tool = TOOLS.get(call.name)
        if tool is None:
            return f"error: there is no tool {call.name!r}; the tools are {', '.join(TOOLS)}"
        problem = ""
        args: dict[str, JsonValue] = {}
        try:
            args = tool.parse(call.arguments)
            tool.check(args)
        except ToolArgumentError as error:
            problem = str(error)
        if tool is SHELL:
            return await self._shell(call, args, problem, round_)
        if tool is WRITE_FILE:
            return await self._write_file(call, args, problem, round_)
        assert tool is READ_FILE
        return await self._read_file(args, problem)

    async def _shell(self, call: ToolCallRequest, args: dict[str, JsonValue], problem: str, round_: int) -> str:
        item = models.TurnItemCommandExecution(
            type="commandExecution", id=f"item_{uuid.uuid4().hex}", status="in_progress", round=round_, command=_text(args, "command"), cwd=self.cwd, arguments=args, tool_call_id=call.id
        )
        await self.stream.item_started(item)
        if problem:
            return await self._failed(item, problem)
        decision = await self.gate.authorize(SHELL, args, item_id=item.id)
        if not decision.allowed:
            return await self._declined(item, decision.refusal)
        timeout = args.get("timeout_ms")
        result = await run_command(item.command, self.cwd, lambda stream, text: self.stream.command_output(item.id, stream, text), timeout_ms=timeout if isinstance(timeout, int) else None)
        if result.exit_code == 0:
            told = result.stdout
        elif result.timed_out:
            told = f"the command was stopped after {timeout} ms\n{result.stdout}{result.stderr}"
        else:
            told = f"exit code {result.exit_code}\n{result.stdout}{result.stderr}"
        outcome: Literal["success", "error", "timed_out"] = "success" if result.exit_code == 0 else "timed_out" if result.timed_out else "error"
        done = item.model_copy(
            update={
                "status": "completed" if result.exit_code == 0 else "failed",
                "stdout": result.stdout,
                "stderr": result.stderr,
                "exit_code": result.exit_code,
                "duration_ms": result.duration_ms,
                "outcome": outcome,
                "tool_result": told,
            }
            | ({"timed_out": True} if result.timed_out else {})
        )
        await self.stream.item_completed(done)
        return told

    async def _write_file(self, call: ToolCallRequest, args: dict[str, JsonValue], problem: str, round_: int) -> str:
        path = _text(args, "path")
        shown = path
        change: Literal["add", "modify"] = "add"
        if not problem:
            try:
                full = inside(self.cwd, path)
                shown, change = str(full), "modify" if full.exists() else "add"
            except ToolArgumentError as error:
                problem = f"write_file: {error}"
        item = models.TurnItemFileChange(
            type="fileChange", id=f"item_{uuid.uuid4().hex}", status="in_progress", round=round_, path=shown, change_kind=change, arguments=args, tool_call_id=call.id
        )
        await self.stream.item_started(item)
        if problem:
            return await self._failed(item, problem)
        decision = await self.gate.authorize(WRITE_FILE, args, item_id=item.id)
        if not decision.allowed:
            return await self._declined(item, decision.refusal)
        try:
            _, change = write_inside(self.cwd, path, _text(args, "content"))
        except ToolArgumentError as error:
            return await self._failed(item, str(error))
        told = f"wrote {path}"
        await self.stream.item_completed(item.model_copy(update={"status": "completed", "change_kind": change, "output": told, "outcome": "success", "tool_result": told}))
        return told

    async def _read_file(self, args: dict[str, JsonValue], problem: str) -> str:
        # A read changes nothing: it has no item of its own, only its result for the model.
        if problem:
            return f"error: {problem}"
        decision = await self.gate.authorize(READ_FILE, args, item_id=None)
        if not decision.allowed:
            return f"error: {decision.refusal}"
        try:
            return read_inside(self.cwd, _text(args, "path"))
        except ToolArgumentError as error:
            return f"error: {error}"

    async def _failed(self, item: models.TurnItemCommandExecution | models.TurnItemFileChange, problem: str) -> str:
        told = f"error: {problem}"
        await self.stream.item_completed(item.model_copy(update={"status": "failed", "error": models.TurnItemToolError(message=problem, retryable=False), "outcome": "error", "tool_result": told}))
        return told

    async def _declined(self, item: models.TurnItemCommandExecution | models.TurnItemFileChange, refusal: str) -> str:
        told = f"error: {refusal}"
        await self.stream.item_completed(item.model_copy(update={"status": "declined", "outcome": "declined", "tool_result": told}))
        return told

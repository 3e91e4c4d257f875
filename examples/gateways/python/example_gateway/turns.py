"""A turn's run — the user's message, then model calls (and, in Agent mode, tool calls) until
the model answers — and its one end: completed, failed, or interrupted by ``turn/cancel``.

A turn runs as an asyncio task of its own. Cancelling it is cancelling that task: wherever it
waits (the model's stream, a command, an approval), it stops there, and its end completes what
it left open — approval requests resolved ``cancelled``, items completed ``cancelled`` — before
its one terminal notification.
"""

from __future__ import annotations

import asyncio
import itertools
import sys
import traceback
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Literal

from pydantic import JsonValue

from agent_gateway import models
from agent_gateway.server import ServerConnection

from .clock import iso_to_micros, now_iso, now_micros
from .permissions import ApprovalRegistry, PermissionGate
from .provider import ChatMessage, ChatModel, ChatReply, ProviderError
from .tool_calls import ToolCalls
from .tools import TOOLS
from .turn_stream import TurnStream

MAX_ROUNDS: Final = 50
"""Model calls a turn may make before it is stopped (a model that keeps calling tools)."""


_ITEM_STATUS: Final[dict[str, models.TurnItemStatus]] = {"Completed": "completed", "Failed": "failed", "Interrupted": "cancelled"}
"""How the items a turn left open end, by how the turn ended."""


class _BudgetExhausted(Exception):
    pass


@dataclass(frozen=True)
class _End:
    status: Literal["Completed", "Failed", "Interrupted"]
    failure: models.TurnFailure | None = None


class _ReplyItems:
    """The items one model answer opens as it streams in: its reasoning, then its text."""

    def __init__(self, stream: TurnStream, round_: int) -> None:
        self._stream = stream
        self._round = round_
        self._reasoning: models.TurnItemReasoning | None = None
        self._answer: models.TurnItemAgentMessage | None = None

    async def reasoning(self, text: str) -> None:
        if self._reasoning is None:
            self._reasoning = models.TurnItemReasoning(type="reasoning", id=f"item_{uuid.uuid4().hex}", status="in_progress", round=self._round, text="")
            await self._stream.item_started(self._reasoning)
        self._reasoning = self._reasoning.model_copy(update={"text": self._reasoning.text + text})
        self._stream.track(self._reasoning)

    async def content(self, text: str) -> None:
        await self._end_reasoning()
        if self._answer is None:
            self._answer = models.TurnItemAgentMessage(type="agentMessage", id=f"item_{uuid.uuid4().hex}", status="in_progress", round=self._round, text="")
            await self._stream.item_started(self._answer)
        await self._stream.agent_message_delta(self._answer.id, text)

    async def _end_reasoning(self) -> None:
        if self._reasoning is not None and self._reasoning.status == "in_progress":
            self._reasoning = self._reasoning.model_copy(update={"status": "completed"})
            await self._stream.item_completed(self._reasoning)

    async def close(self, reply: ChatReply) -> None:
        """The answer is whole: its items are completed."""
        await self._end_reasoning()
        if self._answer is not None:
            await self._stream.item_completed(self._answer.model_copy(update={"status": "completed", "text": reply.content}))


class TurnRun:
    """One turn of a thread, from turn/start to its end."""

    def __init__(
        self,
        *,
        turn: models.Turn,
        thread: models.Thread,
        user_input: Sequence[models.UserInput],
        capabilities: Sequence[models.TurnCapability] | None,
        history: Sequence[ChatMessage],
        connection: ServerConnection,
        approvals: ApprovalRegistry,
        chat: ChatModel,
    ) -> None:
        self.turn = turn
        self._thread = thread
        self._input = list(user_input)
        self._capabilities = None if capabilities is None else list(capabilities)
        self.user_text = "\n".join(i.text for i in self._input if isinstance(i, models.UserInputText))
        self.created_micros = now_micros()
        self.stream = TurnStream(connection, thread.id, turn.id)
        self._connection = connection
        self._gate = PermissionGate(approvals, self.stream, thread.workspace_id, turn.permission_profile)
        self._tools = ToolCalls(self.stream, self._gate, thread.cwd)
        self._history = list(history)
        self._chat = chat
        self._usage: models.TurnUsage | None = None
        self._task: asyncio.Task[None] | None = None
        self._cancel_reason: str | None = None
        self.answer: str | None = None
        """The model's final answer, once the turn completed with one (history for later turns)."""
        self.ended = False

    def snapshot(self) -> models.Turn:
        return self.turn.model_copy(deep=True)

    def as_history(self) -> list[ChatMessage]:
        """What later turns of the thread tell the model of this one: the question and its answer."""
        earlier: list[ChatMessage] = [{"role": "user", "content": self.user_text}]
        if self.answer is not None:
            earlier.append({"role": "assistant", "content": self.answer})
        return earlier

    def block(self) -> models.ThreadTimelineBlock:
        """The turn's block of its thread's timeline."""
        turn = self.turn
        summary = self.answer if turn.status == "Completed" else turn.error.message if turn.error is not None else None
        return models.ThreadTimelineBlock(
            blockId=f"blk_{turn.id}",
            kind="turn_work",
            turnId=turn.id,
            status=turn.status,
            createdAtUnixMicros=self.created_micros,
            completedAtUnixMicros=iso_to_micros(turn.completed_at) if turn.completed_at is not None else None,
            userText=self.user_text,
            summary=summary[:200] if summary else None,
        )

    def start(self) -> None:
        """Starts the run. The task first runs once the handler's task yields, and that task writes
        turn/start's response before it yields (the generated stdio transport writes at once): the
        response goes out before turn/started."""
        self._task = asyncio.get_running_loop().create_task(self._run(), name=f"turn {self.turn.id}")

    async def cancel(self, reason: str | None) -> None:
        """Stops the turn wherever it waits and ends it Interrupted; returns once it has ended."""
        self._cancel_reason = reason
        task = self._task
        if task is not None and not task.done():
            task.cancel()
            await asyncio.wait([task])
        # A task cancelled before its first step never ran its body: the end is made here.
        await self._finish(self._interrupted())

    def _interrupted(self) -> _End:
        message = f"cancelled: {self._cancel_reason}" if self._cancel_reason else "cancelled by the client"
        return _End("Interrupted", models.TurnFailure(kind="cancelled", message=message, retryable=False))

    async def _run(self) -> None:
        try:
            await self._converse()
            end = _End("Completed")
        except asyncio.CancelledError:
            # turn/cancel cancelled this task: the turn ends here, and the task with it.
            task = asyncio.current_task()
            if task is not None:
                task.uncancel()
            end = self._interrupted()
        except ProviderError as error:
            end = _End("Failed", models.TurnFailure(kind="provider_error", message=str(error), retryable=error.retryable))
        except _BudgetExhausted as error:
            end = _End("Failed", models.TurnFailure(kind="budget_exhausted", message=str(error), retryable=False))
        except Exception as error:
            print(f"turn {self.turn.id} failed:\n{traceback.format_exc()}", file=sys.stderr)
            end = _End("Failed", models.TurnFailure(kind="internal", message=f"the gateway failed: {type(error).__name__}: {error}", retryable=False))
        try:
            await self._finish(end)
        except Exception:
            print(f"turn {self.turn.id} could not be ended:\n{traceback.format_exc()}", file=sys.stderr)

    async def _converse(self) -> None:
        await self.stream.turn_started(self.snapshot())
        await self._timeline_changed()
        user = models.TurnItemUserMessage(type="userMessage", id=f"item_{uuid.uuid4().hex}", status="in_progress", content=self._input, capabilities=self._capabilities)
        await self.stream.item_started(user)
        await self.stream.item_completed(user.model_copy(update={"status": "completed"}))
        messages: list[ChatMessage] = [*self._history, {"role": "user", "content": self.user_text}]
        agent = self.turn.mode == "Agent"
        tools: list[dict[str, JsonValue]] = [tool.offered() for tool in TOOLS.values()] if agent else []
        for round_ in itertools.count(1):
            if round_ > MAX_ROUNDS:
                await self.stream.loop_budget_exceeded("rounds", MAX_ROUNDS, round_ - 1)
                raise _BudgetExhausted(f"the model was called {MAX_ROUNDS} times without giving its answer")
            reply = await self._ask(messages, tools, round_)
            # A Chat turn offers no tools: calls the model makes anyway are not run.
            calls = reply.tool_calls if agent else []
            if not calls:
                self.answer = reply.content or None
                return
            messages.append({"role": "assistant", "content": reply.content or None, "tool_calls": [call.as_message_part() for call in calls]})
            for call in calls:
                messages.append({"role": "tool", "tool_call_id": call.id, "content": await self._tools.run(call, round_)})

    async def _ask(self, messages: list[ChatMessage], tools: list[dict[str, JsonValue]], round_: int) -> ChatReply:
        items = _ReplyItems(self.stream, round_)
        reply = await self._chat.complete(self.turn.model or "default", messages, tools, items)
        await items.close(reply)
        if reply.usage is not None:
            before = self._usage or models.TurnUsage(input_tokens=0, output_tokens=0, total_tokens=0)
            self._usage = models.TurnUsage(
                input_tokens=before.input_tokens + reply.usage.prompt_tokens,
                output_tokens=before.output_tokens + reply.usage.completion_tokens,
                total_tokens=before.total_tokens + reply.usage.total_tokens,
            )
        return reply

    async def _finish(self, end: _End) -> None:
        """Ends the turn once: what it left open is closed, then its terminal notification."""
        if self.ended:
            return
        self.ended = True
        self._thread.active_turn_id = None
        if not self.stream.started:
            await self.stream.turn_started(self.snapshot())
        turn = self.turn
        turn.status = end.status
        turn.completed_at = now_iso()
        if self._usage is not None:
            turn.usage = self._usage
        await self._gate.cancel_open()
        await self.stream.complete_open_items(_ITEM_STATUS[end.status])
        if end.failure is None:
            await self.stream.turn_completed(self.snapshot())
        else:
            turn.error = end.failure
            await self.stream.turn_failed(self.snapshot(), end.failure)
        await self._timeline_changed()

    async def _timeline_changed(self) -> None:
        await self._connection.notify_thread_timeline_blocks_changed(
            models.ThreadTimelineBlocksChangedNotification(threadId=self._thread.id, changedBlockIds=[f"blk_{self.turn.id}"], turnId=self.turn.id)
        )

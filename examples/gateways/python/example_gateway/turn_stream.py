"""A turn's notifications: numbered 1, 2, 3, … across every notification of the turn, sent to
the client and kept in the order sent, so that ``turn/items`` replays exactly what was
streamed. It also knows which of the turn's items are open, with what they showed so far, so
that a turn that ends early can complete each of them once.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable
from typing import Literal, TypeVar, cast

from pydantic import JsonValue

from agent_gateway import models
from agent_gateway._wire import WireModel, to_wire
from agent_gateway.registry import NotificationName
from agent_gateway.server import ServerConnection

from .clock import now_iso

Params = TypeVar("Params", bound=WireModel)


class TurnStream:
    def __init__(self, connection: ServerConnection, thread_id: str, turn_id: str) -> None:
        self._connection = connection
        self.thread_id = thread_id
        self.turn_id = turn_id
        self._events: list[models.TurnItemEvent] = []
        self._open: dict[str, models.TurnItem] = {}
        self._ended = False
        # One notification at a time: its number is taken, it is sent, then it is kept.
        self._lock = asyncio.Lock()

    @property
    def last_sequence(self) -> int:
        return len(self._events)

    @property
    def started(self) -> bool:
        return bool(self._events)

    def replay(self, after: int, limit: int | None) -> list[models.TurnItemEvent]:
        """The events after sequence ``after``, at most ``limit`` of them."""
        events = self._events[after:]
        return events if limit is None else events[:limit]

    async def _emit(
        self, method: NotificationName, build: Callable[[int], Params], send: Callable[[Params], Awaitable[None]], live: Callable[[], bool] | None = None
    ) -> None:
        """Numbers and sends one notification; ``live``, checked under the same lock, can refuse it
        (an item the turn's end already closed), so nothing it refuses follows the turn's end."""
        async with self._lock:
            if live is not None and not live():
                return
            sequence = len(self._events) + 1
            params = build(sequence)
            await send(params)
            wire = cast("dict[str, JsonValue]", to_wire(params))
            self._events.append(models.TurnItemEvent(sequence=sequence, method=method, params=wire, recorded_at=now_iso()))

    async def turn_started(self, turn: models.Turn) -> None:
        await self._emit(
            "turn/started",
            lambda seq: models.TurnStartedNotification(thread_id=self.thread_id, turn_id=self.turn_id, sequence=seq, turn=turn),
            self._connection.notify_turn_started,
        )

    async def item_started(self, item: models.TurnItem) -> None:
        """Opens an item; once the turn has ended, nothing is sent."""

        def opens() -> bool:
            if self._ended:
                return False
            self._open[item.id] = item
            return True

        await self._emit(
            "item/started",
            lambda seq: models.ItemStartedNotification(thread_id=self.thread_id, turn_id=self.turn_id, sequence=seq, item_id=item.id, item=item),
            self._connection.notify_item_started,
            opens,
        )

    def track(self, item: models.TurnItem) -> None:
        """Notes what an open item shows now, without a notification (what it would end with if the turn stopped)."""
        if item.id in self._open:
            self._open[item.id] = item

    async def agent_message_delta(self, item_id: str, delta: str) -> None:
        item = self._open.get(item_id)
        if isinstance(item, models.TurnItemAgentMessage):
            self.track(item.model_copy(update={"text": item.text + delta}))
        await self._emit(
            "item/agent_message/delta",
            lambda seq: models.ItemDeltaNotification(thread_id=self.thread_id, turn_id=self.turn_id, sequence=seq, item_id=item_id, stream="agent_message", delta=delta),
            self._connection.notify_item_agent_message_delta,
            lambda: item_id in self._open,
        )

    async def command_output(self, item_id: str, stream: Literal["stdout", "stderr"], delta: str) -> None:
        item = self._open.get(item_id)
        if isinstance(item, models.TurnItemCommandExecution):
            so_far = (item.stdout if stream == "stdout" else item.stderr) or ""
            self.track(item.model_copy(update={stream: so_far + delta}))
        await self._emit(
            "item/command_execution/output_delta",
            lambda seq: models.ItemDeltaNotification(thread_id=self.thread_id, turn_id=self.turn_id, sequence=seq, item_id=item_id, stream=stream, delta=delta),
            self._connection.notify_item_command_execution_output_delta,
            lambda: item_id in self._open,
        )

    async def item_completed(self, item: models.TurnItem) -> None:
        """Completes an open item; one the turn's end already completed is left as it is."""
        await self._emit(
            "item/completed",
            lambda seq: models.ItemCompletedNotification(thread_id=self.thread_id, turn_id=self.turn_id, sequence=seq, item_id=item.id, item=item),
            self._connection.notify_item_completed,
            lambda: self._open.pop(item.id, None) is not None,
        )

    async def complete_open_items(self, status: models.TurnItemStatus) -> None:
        """Completes every item still open, with what it showed so far, in ``status``."""
        for item in list(self._open.values()):
            update: dict[str, object] = {"status": status}
            if isinstance(item, models.TurnItemAgentMessage) and status == "failed":
                update["partial"] = True
            if isinstance(item, (models.TurnItemCommandExecution, models.TurnItemFileChange)):
                update["outcome"] = "cancelled" if status == "cancelled" else "error"
            await self.item_completed(item.model_copy(update=update))

    async def permission_opened(self, request: models.TurnPermissionApprovalRequest) -> None:
        await self._emit(
            "turn/permission/request/opened",
            lambda seq: models.TurnPermissionRequestOpenedNotification(thread_id=self.thread_id, turn_id=self.turn_id, sequence=seq, request=request),
            self._connection.notify_turn_permission_request_opened,
        )

    async def permission_resolved(self, request: models.TurnPermissionApprovalRequest, resolution: models.TurnPermissionApprovalResolution, resolved_at: str) -> None:
        await self._emit(
            "turn/permission/request/resolved",
            lambda seq: models.TurnPermissionRequestResolvedNotification(
                thread_id=self.thread_id, turn_id=self.turn_id, sequence=seq, request_id=request.request_id, resolution=resolution, resolved_at=resolved_at, scope_hash=request.scope_hash
            ),
            self._connection.notify_turn_permission_request_resolved,
        )

    async def audit(
        self,
        kind: Literal["profile_selected", "decision_allowed", "decision_denied", "request_opened", "request_resolved"],
        *,
        tool_name: str,
        action: models.PermissionActionKind,
        scope_hash: str,
        behavior: models.PermissionBehavior | None = None,
        decided_by: Literal["policy", "turn_grant", "resolution", "config"] | None = None,
        request_id: str | None = None,
        reason: str | None = None,
        resolution: models.TurnPermissionApprovalResolution | None = None,
    ) -> None:
        await self._emit(
            "turn/permission/audit",
            lambda seq: models.TurnPermissionAuditEvent(
                thread_id=self.thread_id,
                turn_id=self.turn_id,
                sequence=seq,
                audit_id=f"audit_{uuid.uuid4().hex}",
                kind=kind,
                request_id=request_id,
                tool_name=tool_name,
                action=action,
                behavior=behavior,
                decided_by=decided_by,
                reason=reason,
                scope_hash=scope_hash,
                resolution=resolution,
                recorded_at=now_iso(),
            ),
            self._connection.notify_turn_permission_audit,
        )

    async def loop_budget_exceeded(self, budget: Literal["rounds", "tool_calls"], limit: int, observed: int) -> None:
        await self._emit(
            "turn/tool_loop/budget_exceeded",
            lambda seq: models.TurnToolLoopBudgetExceededNotification(thread_id=self.thread_id, turn_id=self.turn_id, sequence=seq, budget=budget, limit=limit, observed=observed),
            self._connection.notify_turn_tool_loop_budget_exceeded,
        )

    def _end(self) -> bool:
        """Marks the turn ended as its terminal notification is sent: no item opens after it."""
        if self._ended:
            return False
        self._ended = True
        return True

    async def turn_completed(self, turn: models.Turn) -> None:
        await self._emit(
            "turn/completed",
            lambda seq: models.TurnCompletedNotification(thread_id=self.thread_id, turn_id=self.turn_id, sequence=seq, turn=turn, usage=turn.usage),
            self._connection.notify_turn_completed,
            self._end,
        )

    async def turn_failed(self, turn: models.Turn, error: models.TurnFailure) -> None:
        await self._emit(
            "turn/failed",
            lambda seq: models.TurnFailedNotification(thread_id=self.thread_id, turn_id=self.turn_id, sequence=seq, turn=turn, error=error),
            self._connection.notify_turn_failed,
            self._end,
        )

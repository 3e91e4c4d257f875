"""One turn's notifications, each exactly once and in sequence order, across reconnects.

Every notification a gateway logs for a turn carries the turn's sequence (1, 2, 3, … without
gaps), the number the event also has in ``turn/items``. The feed delivers sequence n+1 after n
and nothing twice: a notification at or below the last one delivered is a repeat and is
dropped; one that leaves a gap is held back while the gap is filled from ``turn/items``. After
a reconnect the feed catches up from ``turn/items`` the same way, so the page and the live
stream merge without loss or repetition. Events that ``turn/items`` does not have either, when
later ones arrived, make the turn's error: its stream cannot be put in order.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Final

from agent_gateway import models
from agent_gateway._wire import ValidationFailed, WireModel
from agent_gateway.client import ProtocolClient
from agent_gateway.codec import decode_value
from agent_gateway.ordering import ORDERING_RULES
from agent_gateway.registry import NOTIFICATIONS

from .errors import ClientError

TERMINALS: Final[frozenset[str]] = frozenset(name for rule in ORDERING_RULES if rule["kind"] == "single_terminal" for name in rule["terminals"])
"""The notifications that end a turn (turn/completed, turn/failed), as the protocol's ordering rules name them."""


@dataclass(frozen=True)
class TurnEvent:
    """One event of a turn: its sequence, its method, and its params as a model (None for a method this client does not know)."""

    sequence: int
    method: str
    params: WireModel | None


class TurnFeed:
    """Follows one turn: ``deliver`` hears each event once, in order; ``fail`` hears why the feed cannot go on."""

    def __init__(
        self,
        thread_id: str,
        turn_id: str,
        client: Callable[[], ProtocolClient],
        deliver: Callable[[TurnEvent], None],
        fail: Callable[[ClientError], None],
    ) -> None:
        self.thread_id = thread_id
        self.turn_id = turn_id
        self._client = client
        self._deliver = deliver
        self._fail = fail
        self._last = 0
        self._held: dict[int, TurnEvent] = {}
        self._catching_up = asyncio.Lock()
        self._tasks: set[asyncio.Task[None]] = set()
        self.stopped = False

    @property
    def last_sequence(self) -> int:
        """The sequence of the last event delivered."""
        return self._last

    def stop(self) -> None:
        self.stopped = True
        self._held.clear()
        for task in self._tasks:
            task.cancel()

    def failed(self, error: ClientError) -> None:
        """The feed cannot go on: it stops, and says why once."""
        if not self.stopped:
            self.stop()
            self._fail(error)

    def receive(self, method: str, params: WireModel, sequence: int) -> None:
        """A notification of the turn that arrived live."""
        if self.stopped or sequence <= self._last:
            return
        self._held[sequence] = TurnEvent(sequence, method, params)
        self._drain()
        if self._held and not self._catching_up.locked():
            self.spawn(self.catch_up())

    def spawn(self, work: Awaitable[None]) -> None:
        async def run() -> None:
            await work

        task = asyncio.get_running_loop().create_task(run())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _drain(self) -> None:
        while not self.stopped and (event := self._held.pop(self._last + 1, None)) is not None:
            self._last = event.sequence
            self._deliver(event)
            if event.method in TERMINALS:
                self.stop()

    async def catch_up(self) -> None:
        """Reads from turn/items what came after the last event delivered, and delivers it."""
        async with self._catching_up:
            client = self._client()
            while not self.stopped:
                try:
                    page = await client.turn_items(models.TurnItemsParams(thread_id=self.thread_id, turn_id=self.turn_id, after_sequence=self._last))
                except ConnectionError:
                    # The connection dropped meanwhile: once it is back, the feed catches up again.
                    return
                except Exception as error:
                    self.failed(ClientError.of(error, f"turn/items of turn {self.turn_id}"))
                    return
                before = self._last
                try:
                    for event in page.events:
                        if event.sequence > self._last:
                            self._held[event.sequence] = self._replayed(event)
                except ClientError as error:
                    self.failed(error)
                    return
                self._drain()
                # Done when the log has nothing beyond what was delivered, or when this page
                # delivered nothing: asking again would get the same page.
                if self._last >= page.last_sequence or not page.events or self._last == before:
                    break
        if self._held and not self.stopped:
            first, until = self._last + 1, min(self._held) - 1
            missing = f"event {first} of turn {self.turn_id} never arrived and is" if first == until else f"events {first}…{until} of turn {self.turn_id} never arrived and are"
            self.failed(ClientError("invalid_event", f"{missing} not in turn/items either, although later events arrived"))

    def _replayed(self, event: models.TurnItemEvent) -> TurnEvent:
        entry = NOTIFICATIONS.get(event.method)
        if entry is None:
            # A notification of a later version of the protocol: it keeps its place in the sequence.
            return TurnEvent(event.sequence, event.method, None)
        try:
            params: WireModel = decode_value(entry.params, event.params, "tolerant")
        except ValidationFailed as error:
            raise ClientError("invalid_event", f"turn/items event {event.sequence} ({event.method}) of turn {self.turn_id} is invalid: {error}") from error
        return TurnEvent(event.sequence, event.method, params)

"""The threads and their turns, in memory."""

from __future__ import annotations

from dataclasses import dataclass, field

from agent_gateway import models

from .errors import protocol_error
from .provider import ChatMessage
from .turns import TurnRun


@dataclass
class ThreadRecord:
    thread: models.Thread
    turns: list[TurnRun] = field(default_factory=list[TurnRun])

    def history(self) -> list[ChatMessage]:
        """The earlier turns' questions and answers, oldest first, for the model."""
        return [message for run in self.turns for message in run.as_history()]


class Store:
    def __init__(self) -> None:
        self._threads: dict[str, ThreadRecord] = {}
        self._turn_ids: set[str] = set()

    def add_thread(self, thread: models.Thread) -> ThreadRecord:
        record = self._threads[thread.id] = ThreadRecord(thread)
        return record

    def thread(self, thread_id: str) -> ThreadRecord:
        record = self._threads.get(thread_id)
        if record is None:
            raise protocol_error("thread_not_found", f"there is no thread {thread_id}", thread_id=thread_id)
        return record

    def turn(self, thread_id: str, turn_id: str) -> TurnRun:
        for run in self.thread(thread_id).turns:
            if run.turn.id == turn_id:
                return run
        raise protocol_error("turn_not_found", f"thread {thread_id} has no turn {turn_id}", thread_id=thread_id, turn_id=turn_id)

    def turn_id_used(self, turn_id: str) -> bool:
        """Whether a turn of any thread has this id (a turn id is never used twice)."""
        return turn_id in self._turn_ids

    def add_turn(self, record: ThreadRecord, run: TurnRun) -> None:
        self._turn_ids.add(run.turn.id)
        record.turns.append(run)
        record.thread.active_turn_id = run.turn.id

    def running(self) -> list[TurnRun]:
        return [run for record in self._threads.values() for run in record.turns if not run.ended]

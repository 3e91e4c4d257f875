"""The client driver of the Python client: the generated package (agent_gateway/) and the small
client on it (gateway_client/) behind the command protocol of `turnspec certify --client-cmd`
(docs/certify-client.md). The suite writes one command a line on stdin; each is answered with
one line on stdout. What the client does is what is certified: the driver only turns commands
into calls of the client, and what the client shows of a turn into answers.

    turnspec certify --client-cmd "python driver.py"
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from typing import Annotated, Any, Final, Literal, Union, cast

from pydantic import BaseModel, ConfigDict, Field, NonNegativeInt, TypeAdapter, ValidationError

from agent_gateway import VERSION, models
from agent_gateway._transport import FRAME_LIMIT
from agent_gateway.client import ProtocolClient
from gateway_client import ClientError, GatewayConnection, TurnEvent
from gateway_client.feed import TERMINALS

Json = dict[str, Any]
Answer = Json
"""``{"result": …}`` or ``{"error": {"kind", "message", "reason"?}}``."""

_TURN_ENDS: Final = TERMINALS | {"turn/blocked"}
"""The end of a turn for whoever follows it: its terminal notification, or a block that waits for turn/resume."""


def failure(error: ClientError) -> Answer:
    reported: Json = {"kind": error.kind, "message": str(error)}
    if error.reason is not None:
        reported["reason"] = error.reason
    return {"error": reported}


@dataclass
class TurnView:
    """What a user is shown of one turn as it streams, and how the user answers what it asks."""

    approvals: list[Literal["allow_once", "allow_for_turn", "deny"]]
    answers: list[int]
    respond: Callable[[Coroutine[Any, Any, object]], None]
    """Sends an answer to the gateway while the turn goes on."""
    client: Callable[[], Awaitable[ProtocolClient]]
    deltas: list[str] = field(default_factory=list[str])
    texts: dict[str, str] = field(default_factory=dict[str, str])
    """Each answer's text as last shown, in the order the answers began."""
    output: list[str] = field(default_factory=list[str])
    status: str = ""
    asked: int = 0
    questions: int = 0

    def show(self, event: TurnEvent) -> None:
        params = event.params
        if isinstance(params, models.ItemDeltaNotification):
            if event.method == "item/agent_message/delta":
                self.deltas.append(params.delta)
                self.texts[params.item_id] = self.texts.get(params.item_id, "") + params.delta
            elif event.method == "item/command_execution/output_delta" and params.stream in ("stdout", "stderr"):
                self.output.append(params.delta)
        elif isinstance(params, models.ItemCompletedNotification) and isinstance(params.item, models.TurnItemAgentMessage):
            # The completed item is authoritative over what its deltas added up to.
            self.texts[params.item.id] = params.item.text
        elif isinstance(params, models.TurnPermissionRequestOpenedNotification):
            self._approve(params.request)
        elif isinstance(params, models.TurnQuestionOpenedNotification) and not params.already_surfaced:
            self._answer(params)
        elif isinstance(params, (models.TurnCompletedNotification, models.TurnFailedNotification, models.TurnBlockedNotification)):
            self.status = params.turn.status

    def _approve(self, request: models.TurnPermissionApprovalRequest) -> None:
        n, self.asked = self.asked, self.asked + 1
        if n >= len(self.approvals):
            return  # the user was given no answer for it: the request stays open, as it would on a screen
        answer = models.TurnPermissionRequestRespondParams(request_id=request.request_id, resolution=self.approvals[n], resolve_token=request.resolve_token)

        async def send() -> object:
            return await (await self.client()).turn_permission_request_respond(answer)

        self.respond(send())

    def _answer(self, opened: models.TurnQuestionOpenedNotification) -> None:
        n, self.questions = self.questions, self.questions + 1
        question = opened.question
        if n >= len(self.answers) or not 0 <= self.answers[n] < len(question.options):
            return
        answer = models.TurnQuestionRespondParams(
            thread_id=opened.thread_id, turn_id=opened.turn_id, call_id=question.call_id, index=question.index, option_id=question.options[self.answers[n]].id, answer_token=question.answer_token
        )

        async def send() -> object:
            return await (await self.client()).turn_question_respond(answer)

        self.respond(send())

    def result(self) -> Json:
        return {"status": self.status, "text": "".join(self.texts.values()), "deltas": self.deltas, "output": "".join(self.output)}


class Hello(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: int
    command: Literal["hello"]
    protocol: Literal[1]


class Connect(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: int
    command: Literal["connect"]
    url: str
    token: str


class StartThread(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: int
    command: Literal["start_thread"]


class RunTurn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: int
    command: Literal["run_turn"]
    thread_id: str
    turn_id: str
    text: str
    approvals: list[Literal["allow_once", "allow_for_turn", "deny"]] = []
    answers: list[NonNegativeInt] = []


class Close(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: int
    command: Literal["close"]


Command = Annotated[Union[Hello, Connect, StartThread, RunTurn, Close], Field(discriminator="command")]
COMMANDS: Final = TypeAdapter[Command](Command)
KNOWN: Final = frozenset(("hello", "connect", "start_thread", "run_turn", "close"))


class Driver:
    def __init__(self) -> None:
        self._connection: GatewayConnection | None = None

    def _connected(self) -> GatewayConnection:
        if self._connection is None:
            raise ClientError("connection_lost", "not connected: the connect command comes first")
        return self._connection

    async def answer(self, command: Command) -> Answer:
        try:
            match command:
                case Hello():
                    return {"result": {"name": "agent_gateway (Python, generated by turnspec)", "version": VERSION}}
                case Connect():
                    self._connection = await GatewayConnection.open(command.url, command.token)
                    return {"result": {}}
                case StartThread():
                    return {"result": {"thread_id": await self._start_thread()}}
                case RunTurn():
                    return {"result": await self._run_turn(command)}
                case Close():
                    await self.end()
                    return {"result": {}}
        except ClientError as error:
            return failure(error)

    async def _start_thread(self) -> str:
        try:
            started = await (await self._connected().ready()).thread_start(models.ThreadStartParams())
        except Exception as error:
            raise ClientError.of(error, "thread/start") from error
        return started.thread.id

    async def _run_turn(self, command: RunTurn) -> Json:
        connection = self._connected()
        loop = asyncio.get_running_loop()
        ended: asyncio.Future[None] = loop.create_future()
        sent: list[asyncio.Task[object]] = []
        view = TurnView(command.approvals, command.answers, lambda work: sent.append(loop.create_task(work)), connection.ready)

        def deliver(event: TurnEvent) -> None:
            view.show(event)
            if event.method in _TURN_ENDS and not ended.done():
                ended.set_result(None)

        def fail(error: ClientError) -> None:
            if not ended.done():
                ended.set_exception(error)

        # Followed before turn/start goes out: its first events may come before its response.
        feed = connection.follow(command.thread_id, command.turn_id, deliver, fail)
        try:
            params = models.TurnStartParams(thread_id=command.thread_id, turn_id=command.turn_id, input=[models.UserInputText(type="text", text=command.text)])
            try:
                await (await connection.ready()).turn_start(params)
            except Exception as error:
                raise ClientError.of(error, f"turn/start of turn {command.turn_id}") from error
            await ended
            # An answer the gateway refused is the turn's error, reported like any other.
            for answer in await asyncio.gather(*sent, return_exceptions=True):
                if isinstance(answer, Exception):
                    raise ClientError.of(answer, "answering the gateway")
        finally:
            connection.unfollow(feed)
        return view.result()

    async def end(self) -> None:
        if self._connection is not None:
            await self._connection.close()
            self._connection = None


def parse(line: bytes) -> tuple[object, Command | Answer]:
    """The command on a line and its id, or (when it is not one) the id and the error it is answered with."""
    try:
        raw: object = json.loads(line)
    except ValueError as error:
        return None, {"error": {"kind": "bad_command", "message": f"the line is not JSON: {error}"}}
    command_id = cast("dict[str, object]", raw).get("id") if isinstance(raw, dict) else None
    name = cast("dict[str, object]", raw).get("command") if isinstance(raw, dict) else None
    if name not in KNOWN:
        return command_id, {"error": {"kind": "unsupported", "message": f"this driver has no command {name!r}"}}
    try:
        return command_id, COMMANDS.validate_python(raw)
    except ValidationError as error:
        return command_id, {"error": {"kind": "bad_command", "message": f"{name}: {error}"}}


async def serve() -> None:
    """Reads commands from stdin until it ends and answers each on stdout, one at a time, in order."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=FRAME_LIMIT)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    driver = Driver()
    while line := await reader.readline():
        if not line.strip():
            continue
        command_id, command = parse(line)
        answer = command if isinstance(command, dict) else await driver.answer(command)
        sys.stdout.write(json.dumps({"id": command_id, **answer}) + "\n")
        sys.stdout.flush()
    await driver.end()


if __name__ == "__main__":
    asyncio.run(serve())

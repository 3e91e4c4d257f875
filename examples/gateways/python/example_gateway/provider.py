"""The model: an OpenAI-compatible Chat Completions endpoint (``POST {base}/chat/completions``),
called with streaming so that the answer's text reaches the client as the model writes it.

The HTTP exchange is the standard library's ``http.client``, run on a thread of its own (it
blocks); its lines are handed to the event loop as they arrive. Cancelling the coroutine that
waits on them shuts the socket down, which ends the thread's blocking read: a cancelled turn
leaves no exchange behind.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import socket
import threading
from collections.abc import Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from typing import Literal, NotRequired, Protocol, TypedDict
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, JsonValue, ValidationError

__all__ = ["ChatMessage", "ChatModel", "ChatReply", "ProviderError", "ReplyListener", "ToolCallRequest", "Usage"]


class ProviderError(Exception):
    """A model call that failed; ``retryable`` when trying the same call again may succeed."""

    def __init__(self, message: str, *, retryable: bool) -> None:
        super().__init__(message)
        self.retryable = retryable


class FunctionCall(TypedDict):
    name: str
    arguments: str


class AssistantToolCall(TypedDict):
    id: str
    type: Literal["function"]
    function: FunctionCall


class ChatMessage(TypedDict):
    """One message of the conversation sent to the model."""

    role: Literal["system", "user", "assistant", "tool"]
    content: str | None
    tool_calls: NotRequired[list[AssistantToolCall]]
    tool_call_id: NotRequired[str]


@dataclass(frozen=True)
class ToolCallRequest:
    """A tool call the model asked for: its id, the tool's name and the arguments as JSON text."""

    id: str
    name: str
    arguments: str

    def as_message_part(self) -> AssistantToolCall:
        return {"id": self.id, "type": "function", "function": {"name": self.name, "arguments": self.arguments}}


@dataclass(frozen=True)
class Usage:
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int


@dataclass(frozen=True)
class ChatReply:
    """One whole answer of the model."""

    content: str
    reasoning: str
    tool_calls: list[ToolCallRequest]
    usage: Usage | None


class ReplyListener(Protocol):
    """Told each piece of the answer as it streams in."""

    async def reasoning(self, text: str) -> None: ...

    async def content(self, text: str) -> None: ...


# The parts of the streamed chunks this gateway reads; anything else in them is ignored.


class _Wire(BaseModel):
    model_config = ConfigDict(extra="ignore")


class _FunctionDelta(_Wire):
    name: str | None = None
    arguments: str | None = None


class _ToolCallDelta(_Wire):
    index: int
    id: str | None = None
    function: _FunctionDelta | None = None


class _Delta(_Wire):
    content: str | None = None
    reasoning_content: str | None = None
    tool_calls: list[_ToolCallDelta] | None = None


class _Choice(_Wire):
    delta: _Delta = _Delta()
    finish_reason: str | None = None


class _Usage(_Wire):
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int | None = None


class _Chunk(_Wire):
    choices: list[_Choice] = []
    usage: _Usage | None = None


class _ErrorBody(_Wire):
    message: str


class _ErrorAnswer(_Wire):
    error: _ErrorBody


@dataclass(frozen=True)
class _Status:
    """An answer other than 200, with its body."""

    status: int
    body: bytes


class _End:
    """The answer's body ended."""


_Line = bytes | _Status | _End | Exception


@dataclass(frozen=True)
class _Endpoint:
    https: bool
    host: str
    port: int | None
    target: str

    @staticmethod
    def of(url: str) -> _Endpoint:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"{url!r} is not an http or https URL")
        return _Endpoint(parts.scheme == "https", parts.hostname, parts.port, parts.path + (f"?{parts.query}" if parts.query else ""))


class _Exchange:
    """One HTTP request and its answer, read line by line on a thread of its own."""

    def __init__(self, loop: asyncio.AbstractEventLoop, endpoint: _Endpoint, body: bytes, headers: Mapping[str, str], timeout: float) -> None:
        self._endpoint = endpoint
        self._loop = loop
        self._body = body
        self._headers = dict(headers)
        self._timeout = timeout
        self._lines: asyncio.Queue[_Line] = asyncio.Queue()
        self._lock = threading.Lock()
        self._aborted = False
        self._connection: http.client.HTTPConnection | None = None

    def start(self) -> None:
        threading.Thread(target=self._run, name="model-call", daemon=True).start()

    async def next_line(self) -> _Line:
        return await self._lines.get()

    def abort(self) -> None:
        """Ends the exchange: a thread blocked reading the answer returns at once."""
        with self._lock:
            self._aborted = True
            connection = self._connection
        sock = connection.sock if connection is not None else None
        if sock is not None:
            with suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def _put(self, line: _Line) -> None:
        # The loop is closed when the gateway exits with a call still running: nobody waits for it.
        with suppress(RuntimeError):
            self._loop.call_soon_threadsafe(self._lines.put_nowait, line)

    def _run(self) -> None:
        endpoint = self._endpoint
        kind = http.client.HTTPSConnection if endpoint.https else http.client.HTTPConnection
        connection = kind(endpoint.host, endpoint.port, timeout=self._timeout)
        try:
            connection.connect()
            with self._lock:
                if self._aborted:
                    return
                self._connection = connection
            connection.request("POST", endpoint.target, body=self._body, headers=self._headers)
            response = connection.getresponse()
            if response.status != 200:
                self._put(_Status(response.status, response.read()))
                return
            while line := response.readline():
                self._put(line)
            self._put(_End())
        except (OSError, http.client.HTTPException) as error:
            self._put(error)
        finally:
            connection.close()


@dataclass
class _PartialCall:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list[str])


class ChatModel:
    """A Chat Completions endpoint at ``base_url`` (ending in ``/v1``)."""

    def __init__(self, base_url: str, *, api_key: str | None = None, timeout: float = 300.0) -> None:
        self._url = base_url.rstrip("/") + "/chat/completions"
        self._endpoint = _Endpoint.of(self._url)  # a malformed URL is refused here, before any turn runs
        self._api_key = api_key
        self._timeout = timeout

    @property
    def url(self) -> str:
        return self._url

    async def complete(self, model: str, messages: Sequence[ChatMessage], tools: Sequence[Mapping[str, JsonValue]], listener: ReplyListener) -> ChatReply:
        """Asks the model, streaming; the listener hears each piece as it comes. Raises ProviderError."""
        request: dict[str, object] = {"model": model, "messages": list(messages), "stream": True, "stream_options": {"include_usage": True}}
        if tools:
            request["tools"] = list(tools)
        headers = {"Content-Type": "application/json", "Accept": "text/event-stream", "Connection": "close"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        exchange = _Exchange(asyncio.get_running_loop(), self._endpoint, json.dumps(request).encode("utf-8"), headers, self._timeout)
        exchange.start()
        try:
            return await self._read(exchange, listener)
        finally:
            exchange.abort()

    async def _read(self, exchange: _Exchange, listener: ReplyListener) -> ChatReply:
        content: list[str] = []
        reasoning: list[str] = []
        calls: dict[int, _PartialCall] = {}
        usage: Usage | None = None
        finished = False
        data: list[str] = []

        def reply() -> ChatReply:
            return ChatReply("".join(content), "".join(reasoning), [ToolCallRequest(c.id, c.name, "".join(c.arguments)) for _, c in sorted(calls.items())], usage)

        while True:
            line = await exchange.next_line()
            if isinstance(line, Exception):
                raise ProviderError(f"the call to the model at {self._url} failed: {line}", retryable=True)
            if isinstance(line, _Status):
                raise ProviderError(f"the model answered HTTP {line.status}: {_error_message(line.body)}", retryable=line.status >= 500 or line.status == 429)
            if isinstance(line, _End):
                # Some servers end the stream after the finishing chunk without data: [DONE].
                if finished:
                    return reply()
                raise ProviderError("the model's stream ended before its answer did (no finish_reason, no data: [DONE])", retryable=True)
            text = line.decode("utf-8", errors="replace").rstrip("\r\n")
            if text.startswith("data:"):
                data.append(text[5:].removeprefix(" "))
                continue
            if text or not data:
                continue  # another field of the event (id:, event:, a comment), or a blank line with nothing before it
            # A blank line ends an event.
            payload = "\n".join(data)
            data.clear()
            if payload == "[DONE]":
                return reply()
            try:
                chunk = _Chunk.model_validate_json(payload)
            except ValidationError as error:
                raise ProviderError(f"the model streamed a chunk that is not a chat.completion.chunk: {error}", retryable=False) from error
            if chunk.usage is not None:
                u = chunk.usage
                usage = Usage(u.prompt_tokens, u.completion_tokens, u.total_tokens if u.total_tokens is not None else u.prompt_tokens + u.completion_tokens)
            for choice in chunk.choices[:1]:
                finished = finished or choice.finish_reason is not None
                delta = choice.delta
                if delta.reasoning_content:
                    reasoning.append(delta.reasoning_content)
                    await listener.reasoning(delta.reasoning_content)
                if delta.content:
                    content.append(delta.content)
                    await listener.content(delta.content)
                for part in delta.tool_calls or []:
                    call = calls.setdefault(part.index, _PartialCall())
                    call.id = part.id or call.id
                    if part.function is not None:
                        call.name = part.function.name or call.name
                        if part.function.arguments:
                            call.arguments.append(part.function.arguments)


def _error_message(body: bytes) -> str:
    """The message of an OpenAI-style error body, or the body itself."""
    try:
        return _ErrorAnswer.model_validate_json(body).error.message
    except ValidationError:
        return body.decode("utf-8", errors="replace")[:500] or "(no body)"

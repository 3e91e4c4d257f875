"""Transports: one JSON text per frame, sent and received. A transport is ``send``, ``receive``
(None once the other end has closed) and ``close``; endpoints need nothing else.

- ``stdio_transport()``: this process's standard input and output, one JSON message per line;
- ``spawn(command)``: a child process spoken to on its standard input and output;
- ``connect_websocket(url)`` / ``WebSocketTransport``: WebSocket text frames (needs the optional
  ``websockets`` package);
- ``memory_pair()``: two linked ends in one process, for tests.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

FRAME_LIMIT = 16 * 1024 * 1024
"""The longest line a line transport reads, in bytes."""


class Transport(Protocol):
    async def send(self, text: str) -> None: ...

    async def receive(self) -> str | None: ...

    async def close(self) -> None: ...


class LineTransport:
    """Newline-delimited JSON over a pair of asyncio streams."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter | None, write: Any = None) -> None:
        self._reader = reader
        self._writer = writer
        self._write = write
        self._lock = asyncio.Lock()

    async def send(self, text: str) -> None:
        if "\n" in text or "\r" in text:
            raise ValueError("a frame sent on a line transport must not contain a line break")
        data = text.encode("utf-8") + b"\n"
        async with self._lock:
            if self._writer is not None:
                self._writer.write(data)
                await self._writer.drain()
            else:
                self._write(data)

    async def receive(self) -> str | None:
        while True:
            line = await self._reader.readline()
            if not line:
                return None
            text = line.decode("utf-8").strip()
            if text:
                return text

    async def close(self) -> None:
        if self._writer is not None and not self._writer.is_closing():
            self._writer.close()


async def stdio_transport() -> LineTransport:
    """This process's standard input and output, one JSON message per line (what a stdio server speaks)."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=FRAME_LIMIT)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    out = sys.stdout.buffer

    def write(data: bytes) -> None:
        out.write(data)
        out.flush()

    return LineTransport(reader, None, write)


class ChildProcessTransport(LineTransport):
    """A child process's standard input and output; ``close`` ends its input and waits for it."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        assert process.stdout is not None and process.stdin is not None
        super().__init__(process.stdout, None, None)
        self.process = process
        self._stdin = process.stdin

    async def send(self, text: str) -> None:
        if "\n" in text or "\r" in text:
            raise ValueError("a frame sent on a line transport must not contain a line break")
        self._stdin.write(text.encode("utf-8") + b"\n")
        await self._stdin.drain()

    async def close(self) -> None:
        if not self._stdin.is_closing():
            self._stdin.close()
        try:
            await asyncio.wait_for(self.process.wait(), 5)
        except asyncio.TimeoutError:
            self.process.kill()
            await self.process.wait()


async def spawn(command: Sequence[str], *, cwd: str | None = None, env: Mapping[str, str] | None = None) -> ChildProcessTransport:
    """Starts ``command`` and speaks JSON lines with it; its standard error goes to this process's."""
    process = await asyncio.create_subprocess_exec(
        *command,
        cwd=cwd,
        env=None if env is None else {**os.environ, **env},
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        limit=FRAME_LIMIT,
    )
    return ChildProcessTransport(process)


class WebSocketTransport:
    """WebSocket text frames over a connection of the ``websockets`` package."""

    def __init__(self, connection: Any) -> None:
        self._connection = connection

    async def send(self, text: str) -> None:
        await self._connection.send(text)

    async def receive(self) -> str | None:
        try:
            message = await self._connection.recv()
        except Exception as error:  # the package's ConnectionClosed, whichever version
            if type(error).__name__.startswith("ConnectionClosed"):
                return None
            raise
        return message if isinstance(message, str) else bytes(message).decode("utf-8")

    async def close(self) -> None:
        await self._connection.close()


async def connect_websocket(url: str, *, token: str | None = None) -> WebSocketTransport:
    """Connects to a WebSocket server; ``token`` is sent as a bearer token. Needs ``pip install websockets``."""
    try:
        from websockets.asyncio.client import connect
    except ImportError as error:
        raise RuntimeError("the WebSocket transport needs the websockets package: pip install websockets") from error
    headers = {"Authorization": f"Bearer {token}"} if token else None
    connection = await connect(url, additional_headers=headers, max_size=FRAME_LIMIT)
    return WebSocketTransport(connection)


class _MemoryEnd:
    def __init__(self, inbox: asyncio.Queue[str | None], outbox: asyncio.Queue[str | None]) -> None:
        self._inbox = inbox
        self._outbox = outbox
        self._closed = False

    async def send(self, text: str) -> None:
        if self._closed:
            raise ConnectionError("the transport is closed")
        await self._outbox.put(text)

    async def receive(self) -> str | None:
        return await self._inbox.get()

    async def close(self) -> None:
        if not self._closed:
            self._closed = True
            await self._outbox.put(None)
            await self._inbox.put(None)


def memory_pair() -> tuple[Transport, Transport]:
    """Two linked transports: what one sends, the other receives."""
    a: asyncio.Queue[str | None] = asyncio.Queue()
    b: asyncio.Queue[str | None] = asyncio.Queue()
    return _MemoryEnd(a, b), _MemoryEnd(b, a)

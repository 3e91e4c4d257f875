"""A connection to a gateway over WebSocket (the generated ``ProtocolClient`` on the generated
WebSocket transport) that opens itself again when it drops, and routes each turn's
notifications to the feed that follows the turn."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from contextlib import suppress
from typing import Any

from agent_gateway._transport import Transport, connect_websocket
from agent_gateway._wire import WireModel
from agent_gateway.client import ClientNotifications, LocalError, ProtocolClient

from .errors import ClientError
from .feed import TurnEvent, TurnFeed


class _Watched:
    """A transport that says when it has closed (the other end went, or the network did)."""

    def __init__(self, inner: Transport) -> None:
        self._inner = inner
        self.gone = asyncio.Event()

    async def send(self, text: str) -> None:
        await self._inner.send(text)

    async def receive(self) -> str | None:
        try:
            text = await self._inner.receive()
        except BaseException:
            self.gone.set()
            raise
        if text is None:
            self.gone.set()
        return text

    async def close(self) -> None:
        self.gone.set()
        await self._inner.close()


class _Router(ClientNotifications):
    """Hands every notification that belongs to a followed turn (it names the turn and carries a sequence) to its feed."""

    def __init__(self, feeds: dict[str, TurnFeed]) -> None:
        self._feeds = feeds

    # The generated base calls the on_… method of each notification from here; the feeds need
    # every notification of a turn, whatever its method, to keep the sequence whole.
    async def _dispatch(self, name: str, params: Any) -> None:
        if not isinstance(params, WireModel):
            return
        turn_id: object = getattr(params, "turn_id", None)
        sequence: object = getattr(params, "sequence", None)
        if not isinstance(turn_id, str) or not isinstance(sequence, int):
            return
        feed = self._feeds.get(turn_id)
        if feed is not None and getattr(params, "thread_id", None) == feed.thread_id:
            feed.receive(name, params, sequence)


class GatewayConnection:
    """Open with ``await GatewayConnection.open(url, token)``. A dropped connection is opened
    again after ``delays`` (the last one repeated), up to ``attempts`` times; the turns being
    followed then catch up from turn/items."""

    def __init__(self, url: str, token: str, *, delays: Sequence[float] = (0.05, 0.1, 0.25, 0.5), attempts: int = 20) -> None:
        self._url = url
        self._token = token
        self._delays = tuple(delays)
        self._attempts = attempts
        self._feeds: dict[str, TurnFeed] = {}
        self._router = _Router(self._feeds)
        self._client: ProtocolClient | None = None
        self._transport: _Watched | None = None
        self._open = asyncio.Event()
        self._lost: ClientError | None = None
        self._closing = False
        self._supervisor: asyncio.Task[None] | None = None

    @classmethod
    async def open(cls, url: str, token: str, *, delays: Sequence[float] = (0.05, 0.1, 0.25, 0.5), attempts: int = 20) -> GatewayConnection:
        """Connects; raises ClientError (connection_lost) when the gateway cannot be reached."""
        connection = cls(url, token, delays=delays, attempts=attempts)
        try:
            await connection._connect()
        except Exception as error:
            raise ClientError("connection_lost", f"cannot connect to the gateway at {url}: {error}") from error
        connection._supervisor = asyncio.get_running_loop().create_task(connection._supervise())
        return connection

    @property
    def client(self) -> ProtocolClient:
        """The client of the connection open now (or of the one that dropped, while it is opened again)."""
        if self._lost is not None:
            raise self._lost
        assert self._client is not None
        return self._client

    async def ready(self) -> ProtocolClient:
        """The client once the connection is open; raises ClientError when it is gone for good."""
        await self._open.wait()
        return self.client

    def follow(self, thread_id: str, turn_id: str, deliver: Callable[[TurnEvent], None], fail: Callable[[ClientError], None]) -> TurnFeed:
        """Follows a turn from its first event; ``stop()`` the feed when done with it."""
        feed = TurnFeed(thread_id, turn_id, lambda: self.client, deliver, fail)
        self._feeds[turn_id] = feed
        return feed

    def unfollow(self, feed: TurnFeed) -> None:
        feed.stop()
        if self._feeds.get(feed.turn_id) is feed:
            del self._feeds[feed.turn_id]

    async def close(self) -> None:
        """Closes the connection for good."""
        self._closing = True
        if self._supervisor is not None:
            self._supervisor.cancel()
            with suppress(asyncio.CancelledError):
                await self._supervisor
        if self._client is not None:
            await self._client.close()

    async def _connect(self) -> None:
        transport = _Watched(await connect_websocket(self._url, token=self._token))
        client = ProtocolClient(transport, notifications=self._router, on_protocol_error=self._protocol_error)
        client.start()
        self._client, self._transport = client, transport
        self._open.set()

    def _protocol_error(self, error: LocalError, frame: str) -> None:
        # A notification of a method this client does not know is ignored (a later version of
        # the protocol may send it). One that does not fit its schema is dropped here; the feed
        # of its turn then finds it missing and reads it from turn/items, where it is judged.
        return None

    async def _supervise(self) -> None:
        while not self._closing:
            assert self._transport is not None and self._client is not None
            await self._transport.gone.wait()
            if self._closing:
                return
            self._open.clear()
            await self._client.close()
            if not await self._reconnect():
                return
            for feed in list(self._feeds.values()):
                feed.spawn(feed.catch_up())

    async def _reconnect(self) -> bool:
        problem = ""
        for attempt in range(self._attempts):
            await asyncio.sleep(self._delays[min(attempt, len(self._delays) - 1)])
            try:
                await self._connect()
                return True
            except Exception as error:
                problem = str(error) or type(error).__name__
        self._lost = ClientError("connection_lost", f"could not reconnect to the gateway after {self._attempts} attempts: {problem}")
        self._open.set()
        for feed in list(self._feeds.values()):
            feed.failed(self._lost)
        return False

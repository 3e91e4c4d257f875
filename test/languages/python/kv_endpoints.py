"""Both ends generated from the mini protocol, in one process over memory_pair: a server whose
typed handlers keep a dict, a client that puts, gets and watches through it. Prints what each
call gave as one JSON object: results, the server's error for a missing key, the -32602 a
malformed request gets (with its pointers), the notification the watch received, and the
request the client refused to send."""

from __future__ import annotations

import asyncio
import json

from kv_protocol import models
from kv_protocol._rpc import LocalError, RpcError
from kv_protocol._transport import Transport, memory_pair
from kv_protocol.client import ClientNotifications, ProtocolClient
from kv_protocol.server import ServerConnection, ServerHandlers, serve_connection


class Store:
    """The server's handlers: every request of the protocol (a missing one fails the type checker)."""

    def __init__(self) -> None:
        self.values: dict[str, tuple[models.KvValue, int]] = {}

    async def kv_get(self, params: models.KvGetParams, connection: ServerConnection) -> models.KvGetResult:
        if params.key not in self.values:
            raise RpcError(-32010, "Key not found", {"reason": "key_not_found", "key": params.key})
        value, version = self.values[params.key]
        return models.KvGetResult(key=params.key, value=value, version=version, expires_at=None)

    async def kv_put(self, params: models.KvPutParams, connection: ServerConnection) -> models.KvPutResult:
        version = self.values.get(params.key, (None, 0))[1] + 1
        self.values[params.key] = (params.value, version)
        await connection.notify_kv_changed(models.KvChangedNotification(watch_id="w1", key=params.key, version=version, value=params.value))
        return models.KvPutResult(version=version)

    async def kv_watch(self, params: models.KvWatchParams, connection: ServerConnection) -> models.KvWatchResult:
        return models.KvWatchResult(watch_id="w1")


class Changes(ClientNotifications):
    def __init__(self) -> None:
        self.seen: list[str] = []

    async def on_kv_changed(self, params: models.KvChangedNotification) -> None:
        self.seen.append(f"{params.key}@{params.version}")


async def raw_request(transport: Transport, text: str) -> object:
    await transport.send(text)
    answer = await transport.receive()
    return json.loads(answer or "null")


async def main() -> None:
    handlers: ServerHandlers = Store()
    client_end, server_end = memory_pair()
    serving = asyncio.create_task(serve_connection(server_end, handlers))
    changes = Changes()
    out: dict[str, object] = {}
    async with ProtocolClient(client_end, notifications=changes) as client:
        out["watch"] = (await client.kv_watch(models.KvWatchParams(prefix=""))).watch_id
        out["put"] = (await client.kv_put(models.KvPutParams(key="a", value=models.KvValueText(kind="text", text="one")))).version
        got = await client.kv_get(models.KvGetParams(key="a"))
        out["get"] = [got.key, got.version, got.value.model_dump(by_alias=True, exclude_unset=True)]
        try:
            await client.kv_get(models.KvGetParams(key="nope"))
        except RpcError as error:
            out["missing"] = [error.code, error.data]
        try:
            await client.kv_put(models.KvPutParams.model_construct(key="b"))
        except LocalError as error:
            out["refused"] = [error.reason, [i.pointer for i in error.issues]]
        await asyncio.sleep(0.05)
        out["changes"] = changes.seen
    # A malformed request straight onto the wire: the server answers -32602 with every pointer.
    raw_client, raw_server = memory_pair()
    raw_serving = asyncio.create_task(serve_connection(raw_server, Store()))
    out["invalid"] = await raw_request(raw_client, '{"jsonrpc":"2.0","id":7,"method":"kv/put","params":{"key":5,"extra":true}}')
    out["unknown"] = await raw_request(raw_client, '{"jsonrpc":"2.0","id":8,"method":"kv/nothing","params":{}}')
    await raw_client.close()
    await asyncio.wait_for(asyncio.gather(serving, raw_serving), 5)
    print(json.dumps(out, sort_keys=True))


if __name__ == "__main__":
    asyncio.run(main())

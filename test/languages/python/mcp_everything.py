"""The client generated from test/fixtures/mcp/schemas, in Python, against a real MCP server:
@modelcontextprotocol/server-everything over stdio (the command is the first argument). It
initializes, lists and calls tools, has the server sample through it and ask for its roots,
lists resources and pings; it prints what it saw as one JSON object, with every frame the
client dropped as invalid."""

from __future__ import annotations

import asyncio
import json
import sys

from mcp_protocol import models
from mcp_protocol._rpc import LocalError
from mcp_protocol._transport import spawn
from mcp_protocol.client import ClientNotifications, ProtocolClient


class Handlers:
    """The requests the server sends: each answered, as the ClientHandlers protocol requires."""

    def __init__(self) -> None:
        self.sampled: list[str] = []
        self.roots_asked = 0

    async def sampling_create_message(self, params: models.CreateMessageRequestParams) -> models.CreateMessageResult:
        self.sampled.append(params.messages[0].content.type)
        return models.CreateMessageResult(role="assistant", content=models.TextContent(type="text", text="A sampled answer."), model="test-model", stopReason="endTurn")

    async def ping(self, params: models.PingRequestParams | None) -> models.EmptyResult:
        return models.EmptyResult()

    async def roots_list(self, params: models.ListRootsRequestParams | None) -> models.ListRootsResult:
        self.roots_asked += 1
        return models.ListRootsResult(roots=[models.Root(uri="file:///work/project", name="project")])


class Notes(ClientNotifications):
    def __init__(self) -> None:
        self.tools_changed = 0

    async def on_notifications_tools_list_changed(self, params: models.NotificationParams | None) -> None:
        self.tools_changed += 1


def text_of(result: models.CallToolResult) -> str:
    return "".join(block.text for block in result.content if isinstance(block, models.TextContent))


async def main(command: list[str]) -> None:
    dropped: list[str] = []

    def on_protocol_error(error: LocalError, frame: str) -> None:
        dropped.append(f"{error}: {frame[:300]}")

    handlers, notes = Handlers(), Notes()
    async with ProtocolClient(await spawn(command), handlers, notifications=notes, on_protocol_error=on_protocol_error) as client:
        init = await client.initialize(
            models.InitializeRequestParams(
                protocolVersion="2025-06-18",
                capabilities=models.ClientCapabilities(roots=models.ClientCapabilitiesRoots(listChanged=True), sampling={}),
                clientInfo=models.Implementation(name="turnspec-python-mcp-test", version="1.0.0"),
            )
        )
        await client.notify_notifications_initialized(models.NotificationParams())
        tools = await client.tools_list(models.PaginatedRequestParams())
        echo = await client.tools_call(models.CallToolRequestParams(name="echo", arguments={"message": "hello from python"}))
        total = await client.tools_call(models.CallToolRequestParams(name="get-sum", arguments={"a": 2, "b": 40}))
        sampling = await client.tools_call(models.CallToolRequestParams(name="trigger-sampling-request", arguments={"prompt": "Say something", "maxTokens": 20}))
        await asyncio.sleep(0.3)
        roots = await client.tools_call(models.CallToolRequestParams(name="get-roots-list", arguments={}))
        unknown = await client.tools_call(models.CallToolRequestParams(name="no-such-tool", arguments={}))
        resources = await client.resources_list(models.PaginatedRequestParams())
        pong = await client.ping(models.PingRequestParams())
        try:
            await client.tools_call(models.CallToolRequestParams.model_construct(arguments={}))
            refused = "sent"
        except LocalError as error:
            refused = error.reason
    print(
        json.dumps(
            {
                "server": init.serverInfo.name,
                "protocolVersion": init.protocolVersion,
                "tools": sorted(tool.name for tool in tools.tools),
                "echo": text_of(echo),
                "sum": text_of(total),
                "sampling": text_of(sampling),
                "sampled": handlers.sampled,
                "roots": text_of(roots),
                "rootsAsked": handlers.roots_asked,
                "unknownIsError": unknown.isError,
                "resources": len(resources.resources),
                "ping": pong.model_dump(by_alias=True, exclude_unset=True),
                "missingName": refused,
                "dropped": dropped,
            }
        )
    )


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))

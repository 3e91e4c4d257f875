"""Drive a gateway through one turn with the generated Python client: start it as a child
process (``turnspec serve --stdio --memory``), start a thread and a supervised turn whose
scripted model runs a shell command, allow the command when the gateway asks, and print the
turn as it streams.

    PYTHONPATH=test/languages/python .venv/bin/python examples/python/approval.py
"""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import sys

from agent_gateway import models
from agent_gateway._transport import spawn
from agent_gateway.client import ClientNotifications, ProtocolClient


class TurnPrinter(ClientNotifications):
    """Prints the turn's text and the commands' output; allows each permission request once."""

    def __init__(self) -> None:
        self.client: ProtocolClient | None = None
        self.finished: asyncio.Future[str] = asyncio.get_running_loop().create_future()

    async def on_turn_permission_request_opened(self, params: models.TurnPermissionRequestOpenedNotification) -> None:
        request = params.request
        print(f"[approving {request.tool_name}: {request.reason}]")
        assert self.client is not None
        answer = models.TurnPermissionRequestRespondParams(request_id=request.request_id, resolution="allow_once", resolve_token=request.resolve_token)
        await self.client.turn_permission_request_respond(answer)

    async def on_item_agent_message_delta(self, params: models.ItemDeltaNotification) -> None:
        print(params.delta, end="", flush=True)

    async def on_item_command_execution_output_delta(self, params: models.ItemDeltaNotification) -> None:
        print(params.delta, end="", flush=True)

    async def on_turn_completed(self, params: models.TurnCompletedNotification) -> None:
        self.finished.set_result(params.turn.status)

    async def on_turn_failed(self, params: models.TurnFailedNotification) -> None:
        self.finished.set_result(params.turn.status)


async def main() -> None:
    command = shlex.split(os.environ.get("TURNSPEC_STDIO_COMMAND", "npx turnspec serve --stdio --memory"))
    printer = TurnPrinter()
    async with ProtocolClient(await spawn(command), notifications=printer) as client:
        printer.client = client
        started = await client.thread_start(models.ThreadStartParams())
        # The gateway's default model is scripted: this input is its script. A real model takes plain text.
        script = {"script": [{"tool": "shell", "args": {"command": "echo hello"}}, {"say": "The command said hello.", "chunks": 3}]}
        await client.turn_start(
            models.TurnStartParams(
                thread_id=started.thread.id,
                turn_id="trn_python",
                input=[models.UserInputText(type="text", text=json.dumps(script))],
                permission_profile=models.TurnPermissionProfileSelection(mode="supervised"),
            )
        )
        status = await asyncio.wait_for(printer.finished, 60)
        print(f"\n[{status}]")


if __name__ == "__main__":
    asyncio.run(main())
    sys.exit(0)

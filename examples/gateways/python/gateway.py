"""A gateway of the agent-gateway protocol in Python, on the package `turnspec generate --lang
python` wrote (agent_gateway/): the generated server over stdio, one OpenAI-compatible model,
the reference tools (shell, write_file, read_file), approval requests under supervised
profiles. It claims the core and permissions capabilities.

    python gateway.py --provider-url http://127.0.0.1:8080/v1 [--model NAME]

One JSON-RPC message per line on stdin and stdout; logs go to stderr. It exits when stdin ends.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys

from agent_gateway._transport import stdio_transport
from agent_gateway.server import ServerConnection
from example_gateway.handlers import GatewayHandlers, GatewayOptions
from example_gateway.provider import ChatModel


def parse_arguments(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="A gateway of the agent-gateway protocol over stdio.")
    parser.add_argument("--provider-url", default=os.environ.get("TURNSPEC_PROVIDER_URL"), help="base URL of an OpenAI-compatible API, ending in /v1 (default: $TURNSPEC_PROVIDER_URL)")
    parser.add_argument("--model", default="default", help="the model a thread uses when it names none (default: %(default)s)")
    parser.add_argument("--provider-name", default="openai-compatible", help="the name turns and execution backends give the provider (default: %(default)s)")
    parser.add_argument("--api-key-env", default="OPENAI_API_KEY", help="environment variable holding the provider's API key, sent as a bearer token when set (default: %(default)s)")
    parser.add_argument("--provider-timeout", type=float, default=300.0, help="seconds a model call may stay silent before it fails (default: %(default)s)")
    arguments = parser.parse_args(argv)
    if not arguments.provider_url:
        parser.error("--provider-url is required (or $TURNSPEC_PROVIDER_URL)")
    return arguments


async def serve(arguments: argparse.Namespace) -> None:
    try:
        chat = ChatModel(arguments.provider_url, api_key=os.environ.get(arguments.api_key_env), timeout=arguments.provider_timeout)
    except ValueError as error:
        raise SystemExit(f"gateway.py: --provider-url: {error}") from error
    handlers = GatewayHandlers(GatewayOptions(chat=chat, provider=arguments.provider_name, model=arguments.model))
    connection = ServerConnection(await stdio_transport(), handlers, mode="strict")
    connection.start()
    # stdin ended: the client is gone, and so is the gateway.
    await connection.closed()
    await handlers.shutdown()


def main() -> None:
    asyncio.run(serve(parse_arguments(sys.argv[1:])))


if __name__ == "__main__":
    main()

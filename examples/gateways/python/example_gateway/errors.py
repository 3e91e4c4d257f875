"""Errors that cross the wire, by the reasons the protocol's error registry names."""

from __future__ import annotations

from pydantic import JsonValue

from agent_gateway.registry import ERRORS, ErrorReason
from agent_gateway.server import RpcError


def protocol_error(reason: ErrorReason, message: str, **data: JsonValue) -> RpcError:
    """An error response with the code the registry gives ``reason`` and ``data.reason`` set to it."""
    return RpcError(ERRORS[reason].code, message, {"reason": reason, **data})

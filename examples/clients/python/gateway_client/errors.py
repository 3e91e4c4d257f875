"""The client's one error type: what went wrong, in words a user interface can branch on."""

from __future__ import annotations

from typing import Literal, cast

from agent_gateway.client import LocalError, RpcError

ErrorKind = Literal["rpc_error", "connection_lost", "invalid_event"]


class ClientError(Exception):
    """``kind``: rpc_error (the gateway answered with an error; ``reason`` is its data.reason),
    connection_lost (the connection is gone and could not be opened again), invalid_event (the
    gateway sent something this client cannot use)."""

    def __init__(self, kind: ErrorKind, message: str, *, reason: str | None = None) -> None:
        super().__init__(message)
        self.kind: ErrorKind = kind
        self.reason = reason

    @staticmethod
    def of(error: Exception, doing: str) -> ClientError:
        """The error of a request that failed, as the client reports it."""
        if isinstance(error, ClientError):
            return error
        if isinstance(error, RpcError):
            data: object = error.data
            reason = cast("dict[str, object]", data).get("reason") if isinstance(data, dict) else None
            return ClientError("rpc_error", f"{doing}: the gateway answered {error.code}: {error.message}", reason=reason if isinstance(reason, str) else None)
        if isinstance(error, LocalError) and error.reason == "invalid_incoming":
            return ClientError("invalid_event", f"{doing}: the gateway's answer does not fit the protocol: {error}")
        if isinstance(error, ConnectionError):
            return ClientError("connection_lost", f"{doing}: the connection to the gateway closed")
        raise error

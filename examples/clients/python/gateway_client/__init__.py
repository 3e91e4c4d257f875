"""A client of the agent-gateway protocol on the Python package `turnspec generate --lang
python` wrote (``agent_gateway``): a WebSocket connection that reconnects by itself, and each
turn's notifications delivered once each, in sequence order, across reconnects.
"""

from .connection import GatewayConnection
from .errors import ClientError
from .feed import TurnEvent, TurnFeed

__all__ = ["ClientError", "GatewayConnection", "TurnEvent", "TurnFeed"]

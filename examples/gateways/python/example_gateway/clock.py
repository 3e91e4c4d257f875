"""Timestamps as the protocol writes them."""

from __future__ import annotations

import time
from datetime import datetime, timezone


def now_iso() -> str:
    """The current time in RFC 3339, UTC, to the millisecond."""
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def now_micros() -> int:
    """Microseconds since the Unix epoch."""
    return time.time_ns() // 1000


def iso_to_micros(text: str) -> int:
    """Microseconds since the Unix epoch of a timestamp ``now_iso`` wrote."""
    return int(datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1_000_000)

"""Sortable opaque ids (UUIDv7 layout): time-ordered, so newer ids sort later."""

from __future__ import annotations

import time
from secrets import token_bytes

__all__ = ["new_id"]


def new_id(now_ms: int | None = None) -> str:
    ms = int(time.time() * 1000) if now_ms is None else now_ms
    rand = int.from_bytes(token_bytes(10), "big")
    value = (ms & ((1 << 48) - 1)) << 80
    value |= 0x7 << 76
    value |= (rand >> 68) << 64 & (0xFFF << 64)
    value |= 0b10 << 62
    value |= rand & ((1 << 62) - 1)
    # str(uuid.UUID(int=value)), without building the UUID object (one per stored memory)
    h = f"{value:032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"

"""How deep a JSON text nests, measured on its bytes before any parser sees it.

``json.loads`` recurses once per level, so a line of 10,000 brackets exhausts the stack of
whoever parses it: the HTTP body reader, the MCP stdio guard and the dump reader all measure
first and refuse past their limit.
"""

from __future__ import annotations

import re

import numpy as np

__all__ = ["json_depth"]

# A JSON string literal, matched without backtracking so hostile input stays linear.
_STRING = re.compile(rb'"(?:[^"\\]++|\\.)*+"', re.DOTALL)


def json_depth(raw: bytes) -> int:
    """Deepest nesting of arrays/objects in ``raw``, ignoring brackets inside strings."""
    stripped = _STRING.sub(b'""', raw)
    arr = np.frombuffer(stripped, dtype=np.uint8)
    if arr.size == 0:
        return 0
    opens = (arr == ord("[")) | (arr == ord("{"))
    closes = (arr == ord("]")) | (arr == ord("}"))
    level = np.cumsum(opens.astype(np.int64) - closes.astype(np.int64))
    return int(level.max(initial=0))

"""How a CLI subcommand that reads files or databases fails: one line naming the command, not
a traceback, and exit status 2, the same for every such subcommand."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

from memorywire.errors import MemorywireError

__all__ = ["guarded"]

Handler = Callable[[argparse.Namespace], Any]


def guarded(name: str, handler: Handler) -> Callable[[argparse.Namespace], int]:
    """``handler`` as a subcommand: its exit status, or 2 with ``memorywire NAME: message``
    on stderr when it raises a memorywire error, an OS error or a bad value."""

    def run(args: argparse.Namespace) -> int:
        try:
            return int(handler(args))
        except (MemorywireError, OSError, ValueError) as exc:
            print(f"memorywire {name}: {getattr(exc, 'message', exc)}", file=sys.stderr)
            return 2

    return run

"""The garbage collector of a serving process: startup objects frozen, fewer young collections.

A loaded server holds ~110,000 objects from its imports, the model session, pydantic's
schemas and the store's caches, and almost none of them ever become garbage. CPython's full
collection walks every one of them (30–60 ms on this project's 2-core machine, with the GIL
held), so each full collection under load stalls every request in flight: a tail-latency
spike that has nothing to do with the request. :func:`tune` runs once, after the runtime is
open and before the first request: it collects what startup left, then ``gc.freeze()``\\ s
the survivors into the permanent generation, so later collections walk only what requests
created. It also raises the youngest generation's threshold (700 allocations by default,
which a request path that builds pydantic models crosses several times per request), so the
young collections that do run are fewer and each does more.

Nothing about what is collected changes: cycles created after startup are found as before,
only later; objects frozen at startup are the ones a server keeps for its whole life anyway.
``MEMORYWIRE_GC_FREEZE=0`` and ``MEMORYWIRE_GC_THRESHOLD=700`` give back CPython's behaviour.
"""

from __future__ import annotations

import gc
import os
from dataclasses import dataclass

from memorywire.errors import InvalidRequest

__all__ = ["FREEZE_ENV", "THRESHOLD_ENV", "GcSettings", "settings_from_env", "tune"]

#: ``1`` (default) freezes what startup created; ``0`` leaves it to the collector.
FREEZE_ENV = "MEMORYWIRE_GC_FREEZE"
#: Allocations (net of frees) between young collections; CPython's default is 700.
THRESHOLD_ENV = "MEMORYWIRE_GC_THRESHOLD"

DEFAULT_THRESHOLD = 10_000
_MAX_THRESHOLD = 1_000_000


@dataclass(frozen=True)
class GcSettings:
    freeze: bool = True
    threshold: int = DEFAULT_THRESHOLD


def settings_from_env() -> GcSettings:
    """The settings the environment asks for; a malformed value is refused by name."""
    raw_freeze = os.environ.get(FREEZE_ENV, "1").strip()
    if raw_freeze not in ("0", "1"):
        raise InvalidRequest(f"{FREEZE_ENV} must be 0 or 1, not {raw_freeze!r}")
    raw = os.environ.get(THRESHOLD_ENV, str(DEFAULT_THRESHOLD)).strip()
    try:
        threshold = int(raw)
    except ValueError:
        raise InvalidRequest(f"{THRESHOLD_ENV} must be an integer, not {raw!r}") from None
    if not 1 <= threshold <= _MAX_THRESHOLD:
        raise InvalidRequest(f"{THRESHOLD_ENV} must be between 1 and {_MAX_THRESHOLD}, "
                             f"not {threshold}")
    return GcSettings(freeze=raw_freeze == "1", threshold=threshold)


def tune(settings: GcSettings) -> None:
    """Apply ``settings`` to this process (call it once the server is ready to serve)."""
    _, gen1, gen2 = gc.get_threshold()
    gc.set_threshold(settings.threshold, gen1, gen2)
    if settings.freeze:
        gc.collect()
        gc.freeze()

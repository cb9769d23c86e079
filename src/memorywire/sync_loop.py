"""An event loop on a daemon thread, for the blocking :class:`~memorywire.client.SyncMemory`.

anyio's ``start_blocking_portal`` runs its loop on a non-daemon executor thread that the
interpreter joins before ``atexit`` handlers run, so a script that never closed its client
waited forever for a loop nobody would stop. A daemon thread is not joined; the close that
the script forgot runs from ``atexit`` (or when the client is garbage-collected) through a
:func:`weakref.finalize`, while the loop thread is still alive to run it.
"""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable
from concurrent.futures import Future
from typing import Any

import anyio
from anyio.from_thread import BlockingPortal

__all__ = ["LoopThread"]


class LoopThread:
    def __init__(self, name: str = "memorywire-sync") -> None:
        ready: Future[BlockingPortal] = Future()
        self._thread = threading.Thread(target=self._main, args=(ready,), name=name, daemon=True)
        self._thread.start()
        self.portal = ready.result()

    @staticmethod
    def _main(ready: Future[BlockingPortal]) -> None:
        async def main() -> None:
            async with BlockingPortal() as portal:
                ready.set_result(portal)
                await portal.sleep_until_stopped()

        try:
            anyio.run(main)
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc)
                return
            raise

    def on_loop(self) -> bool:
        return threading.current_thread() is self._thread

    def shutdown(self, aclose: Callable[[], Awaitable[Any]] | None = None) -> None:
        """Run ``aclose`` on the loop, then stop it; idempotent once the loop has stopped."""
        if not self._thread.is_alive():
            return
        if self.on_loop():
            # Collected on the loop thread itself: it cannot block on itself; the daemon
            # thread ends with the process.
            return
        try:
            if aclose is not None:
                self.portal.call(aclose)
        finally:
            self.portal.call(self.portal.stop)
            self._thread.join(10)

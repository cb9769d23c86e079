"""A part's method offered as a method of the object that holds the part.

:class:`~memorywire.governance.store.GovernedStore` is composed of parts (a review desk, a
staging desk, ...) and offers much of their API as its own. ``approve = delegate("_desk",
ReviewDesk.approve)`` in the class body says so in one line: the forwarder keeps the part's
signature (for mypy, through ``ParamSpec``, and for ``inspect``) and docstring, so a signature
is written once, where the work is done.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, Concatenate, ParamSpec, TypeVar

__all__ = ["delegate", "delegate_async"]

P = ParamSpec("P")
R = TypeVar("R")


def delegate(part: str,
             method: Callable[Concatenate[Any, P], R]) -> Callable[Concatenate[Any, P], R]:
    """``method`` called on the object in attribute ``part`` of the holder."""

    @functools.wraps(method)
    def forwarded(self: Any, /, *args: P.args, **kwargs: P.kwargs) -> R:
        return method(getattr(self, part), *args, **kwargs)

    return forwarded


def delegate_async(
    part: str, method: Callable[Concatenate[Any, P], Awaitable[R]],
) -> Callable[Concatenate[Any, P], Coroutine[Any, Any, R]]:
    """:func:`delegate` for a coroutine method: the forwarder is a coroutine function too, so
    ``inspect.iscoroutinefunction`` answers for it as for the part's method."""

    @functools.wraps(method)
    async def forwarded(self: Any, /, *args: P.args, **kwargs: P.kwargs) -> R:
        return await method(getattr(self, part), *args, **kwargs)

    return forwarded

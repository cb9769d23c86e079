"""memorywire: a vendor-neutral wire format for AI-agent memory.

The public face, flat as the first implementation's users import it (``from memorywire import
Memory``): the clients, every wire model and every error. The clients load on first use, so
importing a submodule such as :mod:`memorywire.wire` does not pull in the HTTP client.
"""

from typing import TYPE_CHECKING, Any

from memorywire import errors as _errors
from memorywire._version import __version__ as __version__
from memorywire.errors import *  # noqa: F403
from memorywire.wire import models as _models
from memorywire.wire.models import *  # noqa: F403

if TYPE_CHECKING:
    from memorywire.client import Memory as Memory
    from memorywire.client import RemoteMemory as RemoteMemory
    from memorywire.client import SyncMemory as SyncMemory

_CLIENTS = ("Memory", "RemoteMemory", "SyncMemory")

__all__ = [*_CLIENTS, *_errors.__all__, *_models.__all__, "__version__"]


def __getattr__(name: str) -> Any:
    if name in _CLIENTS:
        from memorywire.installation import problem

        mixed = problem()
        if mixed is not None:  # the first implementation on the same path: see installation
            raise ImportError(mixed)
        from memorywire import client

        return getattr(client, name)
    raise AttributeError(f"module 'memorywire' has no attribute {name!r}")

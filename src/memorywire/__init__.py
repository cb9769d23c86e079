"""memorywire: a vendor-neutral wire format for AI-agent memory.

The public face, flat as the first implementation's users import it (``from memorywire import
Memory``): the clients, every wire model and every error. The clients and the models load on
first use (PEP 562): the ``memorywire`` command imports this package before it reads its
arguments, and ``memorywire --version`` should not build every pydantic model, nor importing
a submodule such as :mod:`memorywire.errors` pull in the HTTP client.
"""

from typing import TYPE_CHECKING, Any

from memorywire import errors as _errors
from memorywire._version import __version__ as __version__
from memorywire.errors import *  # noqa: F403

if TYPE_CHECKING:
    from memorywire.client import Memory as Memory
    from memorywire.client import RemoteMemory as RemoteMemory
    from memorywire.client import SyncMemory as SyncMemory
    from memorywire.wire.models import *  # noqa: F403

_CLIENTS = ("Memory", "RemoteMemory", "SyncMemory")
#: :mod:`memorywire.wire.models`' ``__all__``, written out so that listing it does not build
#: the models (tests/unit/test_public_api.py fails when the two differ).
_MODELS = (
    "PENDING_APPROVAL_DELETED_AT", "ConflictCandidate", "DecisionRequest", "Diff",
    "EmotionalRecord", "EpisodicRecord", "ExpireAction", "ExpirePolicy", "ExpireRequest",
    "ExpireResponse", "ForgetRequest", "ForgetResponse", "Fusion", "MemoryRecord",
    "MemoryType", "MergeRequest", "MergeResponse", "MergeStrategy", "NearDuplicate",
    "ProceduralRecord",
    "Procedure", "RecallHit", "RecallRequest", "RecallResponse", "RememberRequest",
    "RememberResponse", "ReviewRequest", "SemanticRecord", "StoreCount", "StoreFailure",
    "Transition",
)

__all__ = [*_CLIENTS, *_errors.__all__, *_MODELS]


def __getattr__(name: str) -> Any:
    if name in _CLIENTS:
        from memorywire.installation import problem

        mixed = problem()
        if mixed is not None:  # the first implementation on the same path: see installation
            raise ImportError(mixed)
        from memorywire import client

        return getattr(client, name)
    if name in _MODELS:
        from memorywire.wire import models

        return getattr(models, name)
    raise AttributeError(f"module 'memorywire' has no attribute {name!r}")

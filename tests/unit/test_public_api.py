"""The package root is the public face: what the first implementation's users import from it."""

from __future__ import annotations

import subprocess
import sys

import memorywire
from memorywire import errors
from memorywire.wire import models

#: Names code written for the first implementation imports from ``memorywire``.
FIRST_IMPLEMENTATION = {
    "Memory", "SyncMemory", "RemoteMemory",
    "RememberRequest", "RememberResponse", "RecallRequest", "RecallResponse", "RecallHit",
    "ForgetRequest", "MergeRequest", "ExpireRequest", "MemoryRecord", "MemoryType",
    "MemorywireError", "InvalidRequest", "NotFound", "PendingApproval", "CapabilityMissing",
}


def test_all_is_the_clients_every_error_and_every_wire_model() -> None:
    expected = ["Memory", "RemoteMemory", "SyncMemory", *errors.__all__, *models.__all__]
    assert memorywire.__all__ == expected
    assert len(set(memorywire.__all__)) == len(memorywire.__all__)
    assert set(memorywire.__all__) >= FIRST_IMPLEMENTATION


def test_every_exported_name_resolves_to_the_object_of_its_module() -> None:
    from memorywire import client

    for name in memorywire.__all__:
        source = client if name in ("Memory", "RemoteMemory", "SyncMemory") else (
            errors if name in errors.__all__ else models)
        assert getattr(memorywire, name) is getattr(source, name), name


def test_importing_a_submodule_does_not_load_the_http_client() -> None:
    code = "import sys, memorywire.wire; print('memorywire.client' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "False"


def test_unknown_attribute_is_an_attribute_error() -> None:
    try:
        memorywire.NoSuchThing  # type: ignore[attr-defined]  # noqa: B018
    except AttributeError as exc:
        assert "NoSuchThing" in str(exc)
    else:
        raise AssertionError("no AttributeError")

"""Directive detectors as governance runs them: the built-in rules and the pluggable hooks.

The built-in detector is :func:`memorywire.core.directives.detect` (word rules, no model). A
deployment adds its own beside it, for example a model-based classifier or a vendor's memory
guard, by naming them in the governance policy (``"directives": {"detectors":
["package.module:name"]}``) or by passing them to ``recover`` in Python. A hook may be:

* an object with ``inspect(text, memory_type) -> Finding | None`` (this module's protocol);
* a callable ``content -> bool`` (the first implementation's hook shape);
* an object with ``inspect(key, value, operation=...)`` returning something with a truthy
  ``matched`` (OWASP Agent Memory Guard's shape, which 0.5 accepted too).

A named class is instantiated without arguments. A hook that raises is reported, never
skipped in silence: :class:`DetectorSet` raises ``BackendUnavailable`` naming it, so a
recovery or a write does not go on as if the memory had been checked.

Where they run: on ``remember`` in a governed store when the policy's ``directives.action``
is ``flag`` (written, the finding recorded in its audit entry) or ``stage`` (held for a
reviewer), and in ``recover`` (a trusted memory that reads as a directive is quarantined).
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from memorywire.core.directives import Finding, detect, text_of
from memorywire.errors import BackendUnavailable, InvalidRequest

__all__ = ["BUILT_IN", "DetectorSet", "DirectiveDetector", "RuleDetector", "as_detector",
           "load_detector"]


@runtime_checkable
class DirectiveDetector(Protocol):
    @property
    def name(self) -> str: ...

    def inspect(self, text: str, memory_type: str) -> Finding | None:
        """A finding when ``text`` reads as a directive (``None`` or a low score: it does
        not)."""
        ...


class RuleDetector:
    """The built-in word rules (:mod:`memorywire.core.directives`)."""

    name = "rules"

    def inspect(self, text: str, memory_type: str) -> Finding | None:
        return detect(text)


BUILT_IN = RuleDetector()


@dataclass(frozen=True)
class _CallableHook:
    name: str
    fn: Callable[[str], Any]

    def inspect(self, text: str, memory_type: str) -> Finding | None:
        return Finding(1.0, (self.name,), self.name) if self.fn(text) else None


@dataclass(frozen=True)
class _GuardHook:
    """``inspect(key, value, operation=...)`` returning ``.matched`` (Agent Memory Guard)."""

    name: str
    guard: Any

    def inspect(self, text: str, memory_type: str) -> Finding | None:
        res = self.guard.inspect(memory_type, text, operation="write")
        return Finding(1.0, (self.name,), self.name) if getattr(res, "matched", False) \
            else None


def _takes_two_positional(fn: Callable[..., Any]) -> bool:
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return False
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(positional) >= 2 and "operation" not in {p.name for p in params}


def as_detector(obj: Any, name: str | None = None) -> DirectiveDetector:
    """Any supported hook shape (see the module docstring) as a :class:`DirectiveDetector`."""
    label = name or getattr(obj, "name", None) or getattr(obj, "__name__", None) \
        or type(obj).__name__
    method = getattr(obj, "inspect", None)
    if callable(method):
        if _takes_two_positional(method):
            if isinstance(obj, DirectiveDetector):
                return obj
            return _Named(str(label), obj)
        return _GuardHook(str(label), obj)
    if callable(obj):
        return _CallableHook(str(label), obj)
    raise InvalidRequest(f"directive detector {label!r}: neither callable nor an object with "
                         "inspect()")


@dataclass(frozen=True)
class _Named:
    name: str
    inner: Any

    def inspect(self, text: str, memory_type: str) -> Finding | None:
        found = self.inner.inspect(text, memory_type)
        if found is None or isinstance(found, Finding):
            return found
        raise TypeError(f"inspect() returned {type(found).__name__}, not a Finding or None")


def load_detector(spec: str) -> DirectiveDetector:
    """``package.module:name`` imported (a class is instantiated with no arguments)."""
    module, sep, attr = spec.partition(":")
    if not sep or not module or not attr:
        raise InvalidRequest(f"directive detector {spec!r}: expected 'package.module:name'")
    try:
        obj: Any = importlib.import_module(module)
        for part in attr.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError) as exc:
        raise InvalidRequest(f"directive detector {spec!r} cannot be loaded: {exc}") from exc
    if inspect.isclass(obj):
        obj = obj()
    return as_detector(obj, spec)


class DetectorSet:
    """Detectors run in order; the first finding at or above the threshold wins."""

    def __init__(self, detectors: Iterable[DirectiveDetector] = (BUILT_IN,)) -> None:
        self.detectors: tuple[DirectiveDetector, ...] = tuple(detectors)

    @classmethod
    def of(cls, hooks: Sequence[Any] = (), *, built_in: bool = True) -> DetectorSet:
        """The built-in rules (unless ``built_in=False``), then each hook: a spec string, a
        detector, or any supported hook shape."""
        found: list[DirectiveDetector] = [BUILT_IN] if built_in else []
        for hook in hooks:
            found.append(load_detector(hook) if isinstance(hook, str) else as_detector(hook))
        return cls(found)

    @property
    def names(self) -> list[str]:
        return [d.name for d in self.detectors]

    def inspect(self, content: Any, memory_type: str) -> Finding | None:
        text = text_of(content, memory_type)
        for det in self.detectors:
            try:
                found = det.inspect(text, memory_type)
            except Exception as exc:
                raise BackendUnavailable(f"directive detector {det.name!r} failed: "
                                         f"{type(exc).__name__}: {exc}") from exc
            if found is not None and found.directive:
                return found
        return None

"""The README's Layout section names every module that exists, and nothing that does not.

The block lists ``src/memorywire/`` one entry a line: a top-level module (``router.py``) or a
package folder (``wire/``) followed by its modules by file name (``models.py``), a nested
package as ``sub/`` with its modules (``scenarios/ read.py write.py``). A package's
``__init__.py`` (and ``__main__.py``) is covered by its folder.
"""

from __future__ import annotations

import re
from pathlib import Path

import memorywire

README = Path(__file__).resolve().parents[2] / "README.md"
SRC = Path(memorywire.__file__).parent
_IMPLIED = ("__init__.py", "__main__.py")


def layout_entries(text: str) -> dict[str, str]:
    """Entry head (``errors.py``, ``wire/``, ``cli.py, x.py``) -> the text describing it."""
    section = text.split("## Layout", 1)[1]
    block = re.search(r"```(?:text)?\n(.*?)```", section, flags=re.S)
    assert block is not None, "the Layout section lost its code block"
    entries: dict[str, str] = {}
    head: str | None = None
    inside = False
    for line in block.group(1).splitlines():
        if line.startswith("src/memorywire/"):
            inside = True
            continue
        if not inside or not line.strip():
            continue
        indent = len(line) - len(line.lstrip(" "))
        if indent == 0:
            break  # the next top-level folder (benchmarks/, docs/, ...)
        if indent == 2:
            head, _, rest = line.strip().partition("  ")
            entries[head.strip()] = rest
        elif head is not None:
            entries[head] += " " + line.strip()
    return entries


def _named(name: str, text: str) -> bool:
    return re.search(r"(?<![\w.])" + re.escape(name) + r"(?![\w])", text) is not None


def missing_modules(entries: dict[str, str], modules: list[str]) -> list[str]:
    tops = {n.strip() for head in entries for n in head.split(",")}
    missing = []
    for rel in modules:
        parts = rel.split("/")
        if len(parts) == 1:
            if rel not in tops and rel not in _IMPLIED:
                missing.append(rel)
            continue
        folder = parts[0] + "/"
        text = entries.get(folder)
        if text is None:
            missing.append(rel)
            continue
        inner, leaf = parts[1:-1], parts[-1]
        covered = all(_named(f"{sub}/", text) for sub in inner) and (
            leaf in _IMPLIED or _named(leaf, text)
        )
        if not covered:
            missing.append(rel)
    return missing


def _modules() -> list[str]:
    return sorted(p.relative_to(SRC).as_posix() for p in SRC.rglob("*.py"))


def test_layout_lists_every_module() -> None:
    entries = layout_entries(README.read_text(encoding="utf-8"))
    missing = missing_modules(entries, _modules())
    assert not missing, f"README Layout does not list: {missing}"


def test_layout_names_no_module_that_does_not_exist() -> None:
    entries = layout_entries(README.read_text(encoding="utf-8"))
    for head in entries:
        for name in (n.strip() for n in head.split(",")):
            assert (SRC / name).exists(), f"README Layout lists {name}, which does not exist"


def test_the_check_bites() -> None:
    entries = {"errors.py": "errors", "wire/": "models.py, examples/", "testing/": "scenarios/"}
    mods = ["errors.py", "wire/models.py", "wire/codec.py", "wire/examples/__init__.py",
            "testing/scenarios/read.py", "router.py", "cli/main.py"]
    assert missing_modules(entries, mods) == [
        "wire/codec.py", "testing/scenarios/read.py", "router.py", "cli/main.py"
    ]

"""docs/cli.md is the CLI's own help, complete and current.

A reference written by hand drifts: flags are added and the page keeps the old ones. This
regenerates the page from the parser and compares, and checks each subcommand has a section,
so a new command or flag fails here until ``python scripts/cli_reference.py`` is run.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]


def _reference() -> ModuleType:
    spec = importlib.util.spec_from_file_location("cli_reference",
                                                  ROOT / "scripts" / "cli_reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("cli_reference", module)
    spec.loader.exec_module(module)
    return module


def test_every_subcommand_has_a_section() -> None:
    ref = _reference()
    page = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    names = ref.commands()
    assert len(names) >= 25  # the CLI's surface: a parser that lost its commands fails here
    missing = [n for n in names if f"\n## memorywire {n}\n" not in page]
    assert missing == [], f"not in docs/cli.md: {missing} (run python scripts/cli_reference.py)"


def test_reference_matches_the_parser() -> None:
    ref = _reference()
    page = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    assert page == ref.render(), "docs/cli.md is out of date: run python scripts/cli_reference.py"


def test_each_flag_of_a_command_is_in_its_section() -> None:
    """The sections are the parsers' help, so each option string shows up in its own one."""
    ref = _reference()
    page = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    from memorywire.cli.main import build_parser

    for name, sub in ref._subparsers(build_parser()):
        start = page.index(f"\n## memorywire {name}\n")
        end = page.find("\n## memorywire ", start + 1)
        section = page[start:end if end != -1 else len(page)]
        for action in sub._actions:
            if action.help == argparse.SUPPRESS:  # hidden on purpose (test-only flags)
                continue
            for flag in action.option_strings:
                assert flag in section, f"{flag} of 'memorywire {name}' missing from docs/cli.md"

"""Write docs/cli.md, the command-line reference, from the parser's own ``--help`` text.

The reference is generated rather than written so that it cannot drift from the flags the
CLI really takes: ``tests/unit/test_cli_docs.py`` regenerates it and fails when the committed
file differs, or when a subcommand has no section. Run ``python scripts/cli_reference.py``
after changing a subcommand, flag or help text (``--check`` only compares).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET = ROOT / "docs" / "cli.md"
#: Help is wrapped at this width whatever the terminal, so the file is the same everywhere.
WIDTH = 100

HEADER = """# Command-line reference

Generated from `memorywire --help` and each subcommand's `--help` by
`python scripts/cli_reference.py`; `tests/unit/test_cli_docs.py` fails when this file and the
parser disagree. Do not edit by hand: change the help text in `src/memorywire/cli/` and run the
script.

Every data command takes `--store URL` (default: the embedded store under
`~/.local/share/memorywire`, or `$MEMORYWIRE_STORE`) and prints JSON with `--json`.
"""


def _subparsers(parser: argparse.ArgumentParser) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    """Each subcommand's parser, depth first, named by its full command line."""
    for action in parser._actions:  # argparse keeps subparsers only here
        if isinstance(action, argparse._SubParsersAction):
            seen: set[int] = set()
            for name, sub in action.choices.items():
                if id(sub) in seen:  # an alias points at a parser already listed
                    continue
                seen.add(id(sub))
                yield name, sub
                for child, grand in _subparsers(sub):
                    yield f"{name} {child}", grand


def commands() -> list[str]:
    """Every subcommand's full name (``approvals list``), in parser order."""
    from memorywire.cli.main import build_parser

    return [name for name, _ in _subparsers(build_parser())]


def render() -> str:
    """The whole reference as Markdown."""
    os.environ["COLUMNS"] = str(WIDTH)  # argparse reads the width from here
    from memorywire.cli.main import build_parser

    parser = build_parser()
    parts = [HEADER, "## memorywire\n", "```text", parser.format_help().rstrip(), "```\n"]
    for name, sub in _subparsers(parser):
        parts += [f"## memorywire {name}\n", "```text", sub.format_help().rstrip(), "```\n"]
    return "\n".join(parts)


def main(argv: list[str]) -> int:
    text = render()
    if "--check" in argv:
        if not TARGET.exists() or TARGET.read_text(encoding="utf-8") != text:
            print(f"{TARGET.relative_to(ROOT)} is out of date: run python scripts/cli_reference.py",
                  file=sys.stderr)
            return 1
        return 0
    TARGET.write_text(text, encoding="utf-8")
    print(f"wrote {TARGET.relative_to(ROOT)} ({len(commands())} subcommands)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

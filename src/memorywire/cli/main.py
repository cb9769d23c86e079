"""The ``memorywire`` command line: thin, on the public API only.

Every subcommand is a ``register(subparsers)`` callable that adds its parser and sets
``handler`` (``Namespace -> exit code``) as a default. Built-in ones are listed in
:data:`SUBCOMMANDS`; other packages add theirs through the ``memorywire.commands`` entry-point
group, exactly as built-ins do, without touching this module.

Building the parser imports no store, model, governance or validator: ``--version`` and
``--help`` answer at once, and each handler imports what it runs on
(tests/unit/test_cli_lazy.py checks the import list of ``python -m memorywire --version``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from memorywire.cli.audit import register_audit
from memorywire.cli.connect import register_connect
from memorywire.cli.consolidate import register_consolidate
from memorywire.cli.embed import register_embed
from memorywire.cli.forgetting import register_forgetting
from memorywire.cli.hooks import register_hook
from memorywire.cli.ops import register_ops
from memorywire.cli.portability import register_portability
from memorywire.cli.records import register_records
from memorywire.cli.review import register_review
from memorywire.cli.serve import register_serve
from memorywire.errors import MemorywireError
from memorywire.wire.registry import schema, schema_names
from memorywire.wire.versions import CURRENT

__all__ = ["ENTRY_POINT_GROUP", "SUBCOMMANDS", "Register", "build_parser", "main", "mcp_main"]

Subparsers = "argparse._SubParsersAction[argparse.ArgumentParser]"
Register = Callable[[Any], None]
Handler = Callable[[argparse.Namespace], int]

ENTRY_POINT_GROUP = "memorywire.commands"


# --- schema ----------------------------------------------------------------------------------


def _schema(args: argparse.Namespace) -> int:
    if args.list:
        for name in schema_names():
            print(name)
        return 0
    if not args.name:
        print("memorywire schema: give a NAME or --list", file=sys.stderr)
        return 2
    try:
        print(json.dumps(schema(args.name), indent=2, ensure_ascii=False))
    except MemorywireError as exc:
        print(f"memorywire schema: {exc.message}", file=sys.stderr)
        return 2
    return 0


def register_schema(subparsers: Any) -> None:
    p = subparsers.add_parser("schema", help="print a wire schema, or list them")
    p.add_argument("name", nargs="?", metavar="NAME", help="e.g. remember, types/fsm, error")
    p.add_argument("--list", action="store_true", help="print every schema name, one a line")
    p.set_defaults(handler=_schema)


# --- validate --------------------------------------------------------------------------------


def _read(source: str) -> str:
    if source == "-":
        return sys.stdin.read()
    return Path(source).read_text(encoding="utf-8")


def _validate(args: argparse.Namespace) -> int:
    from memorywire.wire.codec import parse_json
    from memorywire.wire.validate import validate

    try:
        text = _read(args.file)
    except OSError as exc:
        print(f"memorywire validate: cannot read {args.file}: {exc.strerror}", file=sys.stderr)
        return 2
    try:
        document = parse_json(text)
    except MemorywireError as exc:
        print(f"(root): {exc.message} [json]")
        return 1
    issues = validate(args.kind, document)
    if not issues:
        print("valid")
        return 0
    for issue in issues:
        print(issue)
    return 1


def register_validate(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "validate",
        help="check a JSON document against a wire schema",
        description="Exit 0 and print 'valid', or exit 1 and print 'PATH: message [keyword]' "
        "for every problem.",
    )
    p.add_argument("kind", metavar="KIND", choices=schema_names(), help="a schema name")
    p.add_argument("file", metavar="FILE", help="a JSON file, or - for standard input")
    p.set_defaults(handler=_validate)


#: Built-in subcommands, registered in this order.
SUBCOMMANDS: list[Register] = [
    register_schema,
    register_validate,
    register_consolidate,
    register_serve,
    register_ops,
    register_records,
    register_portability,
    register_audit,
    register_review,
    register_forgetting,
    register_embed,
    register_connect,
    register_hook,
]


def _plugins() -> list[Register]:
    from importlib.metadata import entry_points

    return [ep.load() for ep in entry_points(group=ENTRY_POINT_GROUP)]


def _version() -> str:
    """The installed metadata's version (and the running code's, where they differ)."""
    from memorywire.installation import version_line

    return f"{version_line()} (wire v{CURRENT})"


def build_parser(extra: Sequence[Register] = ()) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="memorywire", description="memorywire: a wire format for AI-agent memory."
    )
    parser.add_argument("--version", action="version", version=_version())
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for register in [*SUBCOMMANDS, *_plugins(), *extra]:
        register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    from memorywire.installation import problem

    mixed = problem()
    if mixed is not None:  # refused before anything runs: which code would run is unclear
        print(f"memorywire: {mixed}", file=sys.stderr)
        return 2
    parser = build_parser()
    args = parser.parse_args(argv)
    handler: Handler | None = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return 2
    try:
        code = handler(args)
        sys.stdout.flush()
    except BrokenPipeError:
        # The reader went away (``memorywire ... --json | head``): that is how a pipe ends,
        # not an error worth a traceback. Point stdout at /dev/null so the interpreter's own
        # flush at exit does not raise again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141  # 128 + SIGPIPE, what a shell reports for a writer killed by the pipe
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # outermost handler: one line for a person, not a traceback
        if os.environ.get("MEMORYWIRE_DEBUG"):
            raise
        print(f"memorywire {args.command}: {_one_line(exc)}", file=sys.stderr)
        return 1
    return code


def mcp_main() -> int:
    """The ``memorywire-mcp`` script of the first implementation: ``memorywire mcp``,
    configured by ``MEMORYWIRE_STORE`` and ``MEMORYWIRE_AGENT`` (flags still work)."""
    return main(["mcp", *sys.argv[1:]])


def _one_line(exc: Exception) -> str:
    """What went wrong, in the words a user can act on."""
    if isinstance(exc, MemorywireError):
        return f"{exc.code}: {exc.message}"
    if isinstance(exc, UnicodeDecodeError):
        return f"input is not UTF-8 (invalid byte at offset {exc.start})"
    if isinstance(exc, OSError):
        where = f" {exc.filename}" if exc.filename else ""
        return f"cannot use{where}: {exc.strerror or exc}"
    if isinstance(exc, ValueError):  # malformed TOML/JSON config, bad number, ...
        return f"invalid input: {exc}"
    return f"internal error: {type(exc).__name__}: {exc} (MEMORYWIRE_DEBUG=1 shows the traceback)"


if __name__ == "__main__":
    sys.exit(main())

"""The ``memorywire`` command line (see :mod:`memorywire.cli.main`)."""

from memorywire.cli.main import ENTRY_POINT_GROUP, SUBCOMMANDS, Register, build_parser, main

__all__ = ["ENTRY_POINT_GROUP", "SUBCOMMANDS", "Register", "build_parser", "main"]

"""``memorywire export | import | migrate``: move memories between any two stores.

Stores open from URLs with ``--embedder`` (an embedder spec, default the model). The dump
goes to stdout (gzipped with ``--gzip``); the fidelity plan and progress go to stderr, so a
pipe carries only the dump. Progress (records done / total, rate) shows when stderr is a
terminal or with ``--progress`` (see :mod:`memorywire.cli.progress`).

``import`` holds every record to ``remember``'s rules and caps the dump while reading it
(:mod:`memorywire.portability.dump_rules`): the first bad line refuses the dump, naming the
line and the field, unless ``--skip-invalid`` leaves bad lines out and reports them. It is
audited as the local operator, as the CLI's other writes are.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

from memorywire.cli.progress import Progress
from memorywire.errors import InvalidRequest, MemorywireError

__all__ = ["register_portability"]

DUMP_FORMAT = "memorywire-export"
#: ``portability.foreign.FORMATS`` and ``store.portable.OnConflict``, written out so that
#: ``--help`` does not import the stores (tests/unit/test_cli_lazy.py keeps them equal).
FOREIGN_FORMATS = ("memorywire-0.5", "mem0", "letta", "cognee")
ON_CONFLICT = ("skip", "replace", "fail")


def _open(url: str, spec: str | None, governance_db: str | None = None, *,
          create_governance: bool = False) -> Any:
    """The store, governed by ``governance_db`` when one is named (which must exist unless
    ``create_governance``: a misspelt path would otherwise start an empty log and export no
    history)."""
    from memorywire.embed.spec import embedder_from_spec
    from memorywire.store.registry import open_store

    if governance_db is not None:
        from memorywire.governance.db import is_postgres_url

        if not (create_governance or is_postgres_url(governance_db)
                or Path(governance_db).is_file()):
            raise InvalidRequest(f"no governance database at {governance_db}")
    store = open_store(url, embedder=embedder_from_spec(spec or "minilm"))
    if governance_db is None:
        return store
    from memorywire.governance.store import GovernedStore

    return GovernedStore(store, governance_db)


def _import_target(args: argparse.Namespace) -> tuple[str, str | None, bool]:
    """``(store URL, governance database, create it)``: the named store, or without
    ``--store`` the default one with its default governance database, as every other
    command uses them (created on first use)."""
    if args.store is not None:
        return args.store, args.governance_db, False
    from memorywire.server.config import data_dir

    home = data_dir()
    return (f"sqlite:///{home / 'mem.db'}", args.governance_db or str(home / "mem.gov.db"),
            args.governance_db is None)


def _write_audit(store: Any, path: str) -> int:
    from memorywire.governance.auditfile import export_audit

    with open(path, "wb") as out:
        return export_audit(store.audit_log, out)


def _since(text: str | None) -> int | None:
    if text is None:
        return None
    if text.isdigit():
        return int(text)
    try:
        return int(datetime.fromisoformat(text).timestamp() * 1000)
    except ValueError as exc:
        raise InvalidRequest(f"--since {text!r} is neither epoch ms nor ISO-8601") from exc


def _guard(run: Any, name: str) -> int:
    import anyio

    try:
        return int(anyio.run(run))
    except MemorywireError as exc:
        print(f"memorywire {name}: {exc.message}", file=sys.stderr)
        return 1


def _progress(args: argparse.Namespace) -> Progress:
    """On a terminal unless ``--no-progress`` (``--quiet``); elsewhere only with ``--progress``."""
    return Progress(args.command, enabled=args.progress)


def _export(args: argparse.Namespace) -> int:
    from memorywire.portability import export_dump

    async def go() -> int:
        if (args.include_history or args.include_pending or args.audit) and not args.governance_db:
            raise InvalidRequest("--include-history, --include-pending and --audit need "
                                 "--governance-db (the audit log and queue live there)")
        store = _open(args.store, args.embedder, args.governance_db)
        progress = _progress(args)
        try:
            n = await export_dump(store, sys.stdout.buffer, url=args.store, agent_id=args.agent,
                                  user_id=args.user, since=_since(args.since),
                                  include_forgotten=args.include_forgotten,
                                  include_vectors=args.include_vectors,
                                  include_history=args.include_history,
                                  include_pending=args.include_pending, gzip_it=args.gzip,
                                  progress=progress)
            if args.audit:
                entries = _write_audit(store, args.audit)
                print(f"wrote {entries} audit entries to {args.audit}", file=sys.stderr)
        finally:
            progress.close()
            await store.aclose()
        print(f"exported {n} records", file=sys.stderr)
        return 0
    return _guard(go, "export")


def _import(args: argparse.Namespace) -> int:
    from memorywire.governance.actor import acting_as
    from memorywire.portability import import_dump
    from memorywire.portability.dump_rules import DumpLimits
    from memorywire.portability.foreign import import_foreign, open_foreign
    from memorywire.portability.moves import DumpImportCounts
    from memorywire.portability.sources import ForeignCounts
    from memorywire.server.auth import LOCAL_OPERATOR
    from memorywire.store.portable import ImportCounts, OnConflict

    foreign = args.from_format != DUMP_FORMAT
    caps = {k: v for k, v in (("max_bytes", args.max_bytes),
                              ("max_line_bytes", args.max_line_bytes),
                              ("max_records", args.max_records)) if v is not None}

    async def go() -> int:
        if not foreign and args.agent is not None:
            raise InvalidRequest("--agent applies to --from-format mem0, letta and cognee only")
        if foreign and (args.skip_invalid or caps):
            raise InvalidRequest("--skip-invalid and --max-bytes/--max-line-bytes/--max-records "
                                 "apply to memorywire/export dumps only")
        source = open_foreign(args.from_format, args.file, args.agent) if foreign else None
        url, gov_db, create = _import_target(args)
        if create:
            Path(url[len("sqlite:///"):]).parent.mkdir(parents=True, exist_ok=True)
        store = _open(url, args.embedder, gov_db, create_governance=create)
        progress = _progress(args)
        counts: ImportCounts
        try:
            if source is not None:
                with acting_as(LOCAL_OPERATOR):
                    plan, counts = await import_foreign(
                        store, source, on_conflict=OnConflict(args.on_conflict),
                        allow_loss=set(args.allow_loss or ()), progress=progress)
            else:
                with acting_as(LOCAL_OPERATOR):
                    plan, counts = await import_dump(
                        store, args.file, on_conflict=OnConflict(args.on_conflict),
                        allow_loss=set(args.allow_loss or ()), reembed=args.reembed,
                        progress=progress, limits=DumpLimits(**caps),
                        skip_invalid=args.skip_invalid)
        finally:
            progress.close()
            await store.aclose()
        print(plan.table(), file=sys.stderr)
        if isinstance(counts, DumpImportCounts) and counts.index is not None:
            print(f"bulk load into an empty store; vector index built over "
                  f"{counts.index['rows']} rows in {counts.index['seconds']} s", file=sys.stderr)
        elif isinstance(counts, DumpImportCounts) and counts.load_note is not None:
            print(counts.load_note, file=sys.stderr)
        report: dict[str, Any] = {"inserted": counts.inserted, "replaced": counts.replaced,
                                  "skipped": counts.skipped}
        if isinstance(counts, ForeignCounts):
            report.update(history=counts.history, pending=counts.pending)
        if isinstance(counts, DumpImportCounts) and (counts.invalid is not None or any(
                f.field in ("history", "pending") for f in plan.fields)):
            report = dict(counts.to_json())
        if foreign:
            report["plan"] = plan.to_json()
        print(json.dumps(report))
        return 0
    return _guard(go, "import")


def _beside(url: str, name: str) -> Path:
    """A file next to a SQLite target, else in the working directory."""
    if url.startswith("sqlite://") and ":memory:" not in url:
        return Path(url[len("sqlite://"):].split("?", 1)[0] + "." + name)
    return Path(f"memorywire-migrate.{name}")


def _migrate(args: argparse.Namespace) -> int:
    from memorywire.portability import migrate

    async def go() -> int:
        source = _open(args.source, args.embedder)
        target = _open(args.target, args.embedder)
        progress = _progress(args)
        try:
            result = await migrate(
                source, target, source_url=args.source, target_url=args.target,
                checkpoint=Path(args.checkpoint or _beside(args.target, "checkpoint.json")),
                dry_run=args.dry_run, allow_loss=set(args.allow_loss or ()),
                reembed=args.reembed, page=args.page, progress=progress)
        finally:
            progress.close()
            await source.aclose()
            await target.aclose()
        print(result.plan.table(), file=sys.stderr)
        report = json.dumps(result.to_json(), indent=2)
        if not args.dry_run:
            _beside(args.target, "report.json").write_text(report + "\n", encoding="utf-8")
        print(report)
        return 1 if result.mismatches else 0
    return _guard(go, "migrate")


def _upgrade(args: argparse.Namespace) -> int:
    from memorywire.embed.spec import embedder_from_spec
    from memorywire.portability.upgrade import upgrade_in_place

    async def go() -> int:
        report = await upgrade_in_place(
            args.path, embedder_from_spec(args.embedder or "minilm"),
            governance_db=args.governance_db, allow_loss=set(args.allow_loss or ()))
        print(report.plan.table(), file=sys.stderr)
        print(f"{report.path} is now a memorywire store ({report.verified} records read back); "
              f"the 0.5 file is kept as {report.backup}; its audit log and staged writes are "
              f"in {report.governance_db}", file=sys.stderr)
        print(json.dumps(report.to_json()))
        return 0
    return _guard(go, "upgrade")


def _progress_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help="records done / total and the rate on stderr (default: only when "
                        "stderr is a terminal)")
    p.add_argument("--quiet", dest="progress", action="store_false",
                   help="the same as --no-progress")


def register_portability(sub: Any) -> None:
    emb = {"help": "embedder spec for opening the stores (default: minilm; tests: hashing)"}
    p = sub.add_parser("export", help="write a memorywire/export dump of a store to stdout")
    p.add_argument("--store", required=True, metavar="URL", help="the store to dump")
    p.add_argument("--agent", help="only this agent's memories")
    p.add_argument("--user", help="only this user's memories")
    p.add_argument("--since", help="records changed at or after T (epoch ms or ISO-8601)")
    p.add_argument("--include-forgotten", action="store_true",
                   help="also deleted, archived and merged-away records")
    p.add_argument("--include-vectors", action="store_true",
                   help="carry each stored vector (base64 float32, tagged with the embedder)")
    p.add_argument("--gzip", action="store_true", help="gzip the dump")
    _progress_flags(p)
    p.add_argument("--governance-db", metavar="DB",
                   help="the store's governance database (audit log and approval queue)")
    p.add_argument("--include-history", action="store_true",
                   help="carry each memory's revisions from the audit log")
    p.add_argument("--include-pending", action="store_true",
                   help="carry the staged operations awaiting review")
    p.add_argument("--audit", metavar="FILE",
                   help="also write the audit chain to FILE (verify with audit verify --file)")
    p.add_argument("--embedder", **emb)
    p.set_defaults(handler=_export)
    p = sub.add_parser("import", help="import a dump, or data memorywire did not write, into "
                                      "a store (idempotent by id)")
    p.add_argument("--store", metavar="URL",
                   help="the store to import into (default: the default store, governed by "
                        "its default governance database, as the other commands use it)")
    p.add_argument("file", metavar="SOURCE",
                   help="a dump; with --from-format: a memorywire 0.5 database file, a mem0 "
                        "configuration JSON, a Letta server URL or a Cognee dataset name")
    p.add_argument("--from-format", default=DUMP_FORMAT, choices=[DUMP_FORMAT, *FOREIGN_FORMATS],
                   help="what SOURCE is (default: a memorywire/export dump)")
    p.add_argument("--agent", metavar="A",
                   help="mem0: the agent for memories without a mem0 agent_id; letta: the "
                        "Letta agent to read; cognee: the agent the dataset becomes")
    p.add_argument("--on-conflict", choices=ON_CONFLICT, default="skip",
                   help="when an id already exists there (default skip)")
    p.add_argument("--reembed", action="store_true",
                   help="embed again even when the dump's vectors match the target's embedder")
    p.add_argument("--allow-loss", nargs="+", metavar="FIELD",
                   help="go on although the target cannot keep these fields")
    p.add_argument("--skip-invalid", action="store_true",
                   help="leave out records that break remember's rules and report them "
                        "(default: the first one refuses the whole dump)")
    p.add_argument("--max-bytes", type=int, metavar="N",
                   help="refuse a dump larger than N bytes unzipped (default 4 GiB)")
    p.add_argument("--max-line-bytes", type=int, metavar="N",
                   help="refuse a line longer than N bytes (default 8 MiB)")
    p.add_argument("--max-records", type=int, metavar="N",
                   help="refuse more than N records (default 5000000)")
    _progress_flags(p)
    p.add_argument("--governance-db", metavar="DB",
                   help="the target's governance database: restores history and pending "
                        "approvals there, and audits the import")
    p.add_argument("--embedder", **emb)
    p.set_defaults(handler=_import)
    p = sub.add_parser("upgrade", help="convert a memorywire 0.5 database file into a store "
                                       "of this version, in place, keeping a backup")
    p.add_argument("path", metavar="PATH", help="the 0.5 file (as in sqlite-vec://PATH)")
    p.add_argument("--governance-db", metavar="DB",
                   help="where its audit log (as history) and staged writes go (default: "
                        "mem.gov.db beside mem.db; created when missing)")
    p.add_argument("--allow-loss", nargs="+", metavar="FIELD",
                   help="go on although the target cannot keep these fields")
    p.add_argument("--embedder", **emb)
    p.set_defaults(handler=_upgrade)
    p = sub.add_parser("migrate", help="copy every record between two stores, then verify")
    p.add_argument("--from", dest="source", required=True, metavar="URL",
                   help="the store to copy from")
    p.add_argument("--to", dest="target", required=True, metavar="URL",
                   help="the store to copy into")
    p.add_argument("--dry-run", action="store_true", help="print the fidelity plan only")
    p.add_argument("--allow-loss", nargs="+", metavar="FIELD",
                   help="go on although the target cannot keep these fields")
    p.add_argument("--checkpoint", metavar="PATH",
                   help="resume file: a stopped migrate continues where it left off")
    p.add_argument("--reembed", action="store_true",
                   help="embed again even when both stores use the same embedder")
    p.add_argument("--page", type=int, default=500, help="records per batch (default 500)")
    _progress_flags(p)
    p.add_argument("--embedder", **emb)
    p.set_defaults(handler=_migrate)

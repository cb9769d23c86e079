"""Mutation testing of the trust core: each module against its own tests, with mutmut.

``make mutation`` runs this under the mutmut virtualenv (``.cache/venv-mutation``, layered over
``.venv``). For every module in :data:`MODULES` it lays out a small project root under
``.cache/mutation/<module>/`` (links to ``src``, ``tests`` and ``benchmarks``, and a
``pyproject.toml`` whose ``[tool.mutmut]`` names that one module and its test files), runs
``mutmut run`` there from
scratch (a cached verdict could hide a survivor that a changed test no longer kills), and
writes ``mutation-report.json``: per module ``killed``, ``survived``, ``equivalent`` (each with
its reviewed one-line reason), ``score`` and the surviving mutants' diffs.

A mutant counts as *equivalent* only when ``scripts/mutation_equivalents.toml`` lists it with
the same change (the removed and added lines): when code moves and mutmut's numbering shifts,
the entry no longer matches, the mutant counts as survived and the entry is reported stale,
so nothing is skipped without a reviewed reason. The exit status is 1 when a module scores
below ``--min-score`` (0.95: the share of non-equivalent mutants its tests kill).

Kept out of ``.ci/run``: it runs a few thousand mutants (see docs/testing.md for timings).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
EQUIVALENTS = ROOT / "scripts" / "mutation_equivalents.toml"
WORK = ROOT / ".cache" / "mutation"

#: Module (under src/memorywire) -> its own tests, the fast focused ones first: mutmut runs
#: them in this order with ``-x``, so a mutant usually dies before the slow randomized trials.
MODULES: dict[str, tuple[str, ...]] = {
    "governance/chain.py": (
        "tests/unit/test_chain.py",
        "tests/unit/test_audit.py",
        "tests/unit/test_audit_tamper.py",
    ),
    "governance/receipts.py": ("tests/unit/test_receipt_verify.py", "tests/unit/test_receipts.py"),
    "governance/erasure.py": ("tests/unit/test_erasure.py", "tests/unit/test_receipts.py"),
    "server/auth.py": ("tests/unit/test_auth.py",),
    "wire/door.py": ("tests/unit/test_wire_door.py",),
    "wire/codec.py": ("tests/unit/test_wire_codec.py", "tests/unit/test_errors.py"),
    "core/merge.py": ("tests/unit/test_core_merge.py", "tests/unit/test_core_records.py"),
    "core/records.py": ("tests/unit/test_core_records.py",),
    "core/fusion.py": ("tests/unit/test_fusion.py",),
}

#: mutmut's verdicts, as this report counts them. A timeout or crash is a detected mutant;
#: "no tests" (no test of the module reaches the code) and "suspicious" are not.
KILLED = {"killed", "timeout", "segfault", "caught by type check"}
SURVIVED = {"survived", "no tests", "suspicious"}


@dataclass
class ModuleResult:
    module: str
    tests: tuple[str, ...]
    killed: int = 0
    survived: list[dict[str, str]] = field(default_factory=list)
    equivalent: list[dict[str, str]] = field(default_factory=list)
    stale: list[dict[str, str]] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def score(self) -> float:
        judged = self.killed + len(self.survived)
        return 1.0 if judged == 0 else self.killed / judged

    def to_dict(self) -> dict[str, Any]:
        return {
            "tests": list(self.tests),
            "killed": self.killed,
            "survived": len(self.survived),
            "equivalent": self.equivalent,
            "score": round(self.score, 4),
            "survivors": self.survived,
            "stale_equivalents": self.stale,
            "seconds": round(self.seconds, 1),
        }


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    raise TypeError(f"cannot write {value!r} as TOML")


def _table(name: str, values: dict[str, Any]) -> str:
    return "\n".join([f"[{name}]", *(f"{k} = {_toml_value(v)}" for k, v in values.items())])


def lay_out(module: str, tests: Sequence[str]) -> Path:
    """A fresh project root for one module: mutmut reads its config from the cwd."""
    root = WORK / module.replace("/", "_").removesuffix(".py")
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    for name in ("src", "tests", "benchmarks"):
        (root / name).symlink_to(ROOT / name)
    pytest_ini = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["tool"]["pytest"][
        "ini_options"
    ]
    mutmut = {
        "source_paths": ["src/memorywire"],
        "only_mutate": [f"src/memorywire/{module}"],
        "pytest_add_cli_args_test_selection": list(tests),
        "pytest_add_cli_args": ["-p", "no:cacheprovider", "-q"],
        # test_fusion checks the adversarial benchmark's published numbers
        "also_copy": ["benchmarks"],
        # Re-run every mutant on every run: a verdict cached against older tests proves nothing.
        "use_git_change_detection": False,
    }
    text = _table("tool.mutmut", mutmut) + "\n\n" + _table("tool.pytest.ini_options", pytest_ini)
    (root / "pyproject.toml").write_text(text + "\n", "utf-8")
    return root


def run_mutmut(root: Path, jobs: int, log: Path) -> None:
    mutmut = Path(sys.executable).parent / "mutmut"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    with log.open("w") as out:
        proc = subprocess.run([str(mutmut), "run", "--max-children", str(jobs)], cwd=root,
                              env=env, stdout=out, stderr=subprocess.STDOUT, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"mutmut failed in {root} (exit {proc.returncode}); see {log}")


def change_of(diff: str) -> str:
    """The mutated lines of a unified diff, as one line: ``old => new``."""
    lines = diff.splitlines()
    old = [x[1:].strip() for x in lines if x.startswith("-") and not x.startswith("---")]
    new = [x[1:].strip() for x in lines if x.startswith("+") and not x.startswith("+++")]
    return " / ".join(old) + " => " + " / ".join(new)


def verdicts(root: Path, module: str) -> dict[str, tuple[str, str]]:
    """Every mutant of ``module``: its verdict and (for the ones not killed) its change."""
    from mutmut.configuration import reset_config
    from mutmut.mutation.data import SourceFileMutationData
    from mutmut.mutation.diff_apply import get_diff_for_mutant
    from mutmut.stats import status_by_exit_code

    here = Path.cwd()
    os.chdir(root)
    try:
        reset_config()
        path = Path("src/memorywire") / module
        data = SourceFileMutationData(path=path)
        data.load()
        out: dict[str, tuple[str, str]] = {}
        for name, code in sorted(data.exit_code_by_key.items()):
            status = status_by_exit_code[code]
            if status not in KILLED | SURVIVED:
                raise SystemExit(f"{name}: unexpected mutmut verdict {status!r}")
            diff = "" if status in KILLED else get_diff_for_mutant(name, path=path)
            out[name] = (status, change_of(diff) if diff else "")
        return out
    finally:
        os.chdir(here)


def load_equivalents() -> dict[str, dict[str, str]]:
    if not EQUIVALENTS.exists():
        return {}
    doc = tomllib.loads(EQUIVALENTS.read_text("utf-8"))
    out: dict[str, dict[str, str]] = {}
    for entry in doc.get("equivalent", []):
        for key in ("module", "mutant", "change", "reason"):
            if not isinstance(entry.get(key), str) or not entry[key].strip():
                raise SystemExit(f"{EQUIVALENTS.name}: an entry lacks {key!r}: {entry}")
        out[entry["mutant"]] = entry
    return out


def judge(module: str, tests: tuple[str, ...], found: dict[str, tuple[str, str]],
          equivalents: dict[str, dict[str, str]]) -> ModuleResult:
    result = ModuleResult(module, tests)
    for name, (status, change) in found.items():
        if status in KILLED:
            result.killed += 1
            continue
        entry = equivalents.get(name)
        if entry is not None and entry["change"] == change:
            result.equivalent.append({"mutant": name, "change": change,
                                      "reason": entry["reason"]})
        else:
            result.survived.append({"mutant": name, "status": status, "change": change})
    for name, entry in equivalents.items():
        if entry["module"] != module:
            continue
        status, change = found.get(name, ("missing", ""))
        if status in KILLED or status == "missing" or entry["change"] != change:
            result.stale.append({"mutant": name, "now": status, "change": change,
                                 "listed_change": entry["change"]})
    return result


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--module", action="append", choices=sorted(MODULES),
                    help="only this module (repeatable); default: all of them")
    ap.add_argument("--jobs", type=int, default=2, help="mutmut --max-children (default 2)")
    ap.add_argument("--report", type=Path, default=ROOT / "mutation-report.json")
    ap.add_argument("--min-score", type=float, default=0.95)
    args = ap.parse_args(argv)
    equivalents = load_equivalents()
    unknown = {e["module"] for e in equivalents.values()} - set(MODULES)
    if unknown:
        raise SystemExit(f"{EQUIVALENTS.name} names modules not tested here: {sorted(unknown)}")

    report: dict[str, Any] = {"tool": "mutmut " + _mutmut_version(), "min_score": args.min_score,
                              "modules": {}}
    if args.report.exists() and args.module:  # a partial run updates the report it finds
        report["modules"] = json.loads(args.report.read_text("utf-8")).get("modules", {})
    failed = []
    for module in args.module or list(MODULES):
        tests = MODULES[module]
        missing = [t for t in tests if not (ROOT / t).exists()]
        if missing:
            raise SystemExit(f"{module}: its tests {missing} do not exist")
        start = time.monotonic()
        root = lay_out(module, tests)
        run_mutmut(root, args.jobs, root / "mutmut.log")
        result = judge(module, tests, verdicts(root, module), equivalents)
        result.seconds = time.monotonic() - start
        report["modules"][module] = result.to_dict()
        args.report.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", "utf-8")
        print(f"{module:24} killed {result.killed:4}  survived {len(result.survived):3}  "
              f"equivalent {len(result.equivalent):3}  score {result.score:.3f}  "
              f"({result.seconds:.0f} s)", flush=True)
        for s in result.survived:
            print(f"    survived {s['mutant']} [{s['status']}]: {s['change']}")
        for s in result.stale:
            print(f"    stale equivalent {s['mutant']} (now {s['now']}): {s['change']}")
        if result.score < args.min_score:
            failed.append(module)
    print(f"report: {args.report}")
    if failed:
        print(f"below {args.min_score}: {', '.join(failed)}")
        return 1
    return 0


def _mutmut_version() -> str:
    from importlib.metadata import version

    return version("mutmut")


if __name__ == "__main__":
    sys.exit(main())

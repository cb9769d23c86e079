"""Every shell and Python block of README.md, CONTRIBUTING.md, CHANGELOG.md and docs/ runs.

Each block (or each ``session`` of blocks) runs in an empty folder with a home of its own
(tests/docs/runner.py); a block that cannot run here says why in a ``docs-test: skip``
marker above it (tests/docs/blocks.py, docs/testing.md). The README's Python example is
marked as run by tests/unit/test_readme.py, which also checks what it prints, and the
framework examples of docs/integrations.md by tests/integrations/test_docs_examples.py,
where their extras are installed: those are not run twice.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.docs.blocks import Unit, parse, units
from tests.docs.links import ROOT, doc_pages
from tests.docs.runner import run_unit

PAGES = doc_pages()


def _all_units() -> list[Unit]:
    found: list[Unit] = []
    for page in PAGES:
        found += units(parse(page, page.read_text(encoding="utf-8")).blocks)
    return found


UNITS = _all_units()


def test_every_fence_and_marker_is_well_formed() -> None:
    problems = [p for page in PAGES for p in parse(page, page.read_text("utf-8")).problems]
    assert not problems, "\n".join(problems)


def test_a_skip_names_where_the_block_is_run_when_it_says_so() -> None:
    """A skip that hands the block to another test must name a test file that exists."""
    for page in PAGES:
        for block in parse(page, page.read_text("utf-8")).blocks:
            if block.skip and block.skip.startswith("run by "):
                named = block.skip.removeprefix("run by ").split()[0].rstrip(",;")
                assert (ROOT / named).is_file(), f"{page.name}:{block.line}: {block.skip}"


@pytest.mark.slow
@pytest.mark.parametrize("unit", UNITS, ids=[u.name for u in UNITS])
def test_block_runs_in_a_fresh_folder_and_home(unit: Unit, tmp_path: Path) -> None:
    outcome = run_unit(unit, tmp_path)
    assert outcome.ok, "\n".join(outcome.log)

"""No relative link or anchor of README, CONTRIBUTING, CHANGELOG or docs/ leads nowhere.

The same links ``make docs`` checks with mkdocs --strict, here without mkdocs, so that the
core suite (and so CI) fails on a broken link even where the docs venv is not built.
"""

from __future__ import annotations

from pathlib import Path

from tests.docs.links import anchors, broken_links, doc_pages, slug


def test_no_link_of_the_docs_is_broken() -> None:
    broken = broken_links(doc_pages())
    assert not broken, "\n".join(map(str, broken))


def test_every_docs_page_is_checked() -> None:
    names = {p.name for p in doc_pages()}
    assert {"README.md", "CONTRIBUTING.md", "mcp.md", "v0.md", "testing.md"} <= names


def test_anchors_are_githubs() -> None:
    assert slug("Session 7: issues 19 and 20 — measured (main ed0c511)") == (
        "session-7-issues-19-and-20--measured-main-ed0c511")
    assert slug("The `serve` [flag](x.md) *here*") == "the-serve-flag-here"


def test_the_check_bites(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    target = tmp_path / "docs" / "b.md"
    target.write_text("# Title\n\n## Twice\n\n## Twice\n\n<a id=\"pinned\"></a>\n"
                      "## Run `make docs`\n"
                      "```sh\n# not a heading\n```\n", encoding="utf-8")
    page = tmp_path / "a.md"
    page.write_text(
        "[ok](docs/b.md) [ok](docs/b.md#twice-1) [ok](docs/b.md#pinned) [ok](#here)\n"
        "# Here\n"
        "[gone](docs/c.md) [anchor](docs/b.md#not-a-heading) [own](#nowhere)\n"
        "`[code](docs/none.md)` [web](https://example.invalid/x)\n"
        "```text\n[in a fence](docs/none.md)\n```\n"
        "![img](docs/missing.png)\n", encoding="utf-8")
    assert anchors(target) == {"title", "twice", "twice-1", "pinned", "run-make-docs"}
    found = [(b.line, b.target, b.why) for b in broken_links([page], root=tmp_path)]
    assert found == [
        (3, "docs/c.md", "no such file"),
        (3, "docs/b.md#not-a-heading", "no such anchor"),
        (3, "#nowhere", "no such anchor"),
        (8, "docs/missing.png", "no such file"),
    ]

import apsw
import pytest

from memorywire.core.textsearch import MAX_TERMS, fts_query, query_terms


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("What is my favourite colour?", '"favourite" OR "colour"'),
        ("the a of and", None),
        ("", None),
        ("Alice's cat", '"alice" OR "cat"'),
        ("cat CAT Cat", '"cat"'),
        ('say "hi" NEAR(x y) col:val -neg *', '"say" OR "hi" OR "near" OR "x" OR "y" OR "col" OR '
         '"val" OR "neg"'),
        ("snake_case words", '"snake" OR "case" OR "words"'),
    ],
)
def test_fts_query(text: str, expected: str | None) -> None:
    assert fts_query(text) == expected


def test_terms_are_capped() -> None:
    text = " ".join(f"word{i}" for i in range(100))
    assert len(query_terms(text)) == MAX_TERMS
    assert query_terms(text, max_terms=3) == ["word0", "word1", "word2"]


@pytest.mark.parametrize(
    "hostile",
    ['"', "'", "NEAR(a b, 3)", "a AND OR NOT b", "content:x", "^start", "x*", "(((", "{a b}",
     "a\x00b", "ünïcödé café", "🙂 emoji", "-x +y", "a:b:c", "NOT"],
)
def test_hostile_queries_are_valid_fts5(hostile: str) -> None:
    conn = apsw.Connection(":memory:")
    try:
        conn.execute("CREATE VIRTUAL TABLE t USING fts5(content)")
        conn.execute("INSERT INTO t VALUES ('a b x start near café emoji content')")
        q = fts_query(hostile)
        if q is not None:
            conn.execute("SELECT rowid FROM t WHERE t MATCH ?", (q,)).fetchall()
    finally:
        conn.close()

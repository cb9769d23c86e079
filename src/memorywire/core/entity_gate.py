"""Entity-masked evidence: is a question that names someone known answered, or only "about" them?

A question that names a stored person ("What is Alice's shoe size?") lands on Alice's
memories with cosines as high as a real paraphrase (0.4-0.7 for the default MiniLM), because
the name carries most of the similarity. No cosine floor and no list gate built on cosines can
tell "about Alice" from "answers the question". This module takes the name out and asks what
is left:

* **Named words** of the query: words written with a capital inside the question (or as its
  first word when that is not a stop word), e.g. ``Alice``, ``LGBTQ``. A named word counts only
  when one of the examined hits holds it: the store knows that name, and the list is about it.
* **Rest**: the query's other content words (``core.textsearch.query_terms`` minus the named
  words). With no rest ("Tell me about Alice") the list stands: the question asks for the
  named thing itself.
* **Lexical evidence**: a hit that holds a named word also holds a rest word (matched by
  :func:`same_word`, a light stemmer: plural ``s`` dropped, one word the prefix of the other
  or five shared leading letters).
* **Semantic evidence**: the *masked* question (named words cut out of its text, embedded
  once, only when the lexical test failed) reaches ``MASKED_MIN_COSINE`` against the stored
  vector of a hit that holds a named word, or singles one such hit out (``MASKED_MIN_GAP``
  above the median of the named hits). "What does Alice do for a living?" keeps "do for a
  living", which is close to "works as a nurse"; "What is Alice's shoe size?" keeps "shoe
  size", which is close to nothing she stored.

Only hits that hold a named word give evidence: another person's "favourite author" shares
"favourite" with "What is Bob's favourite movie?" but does not answer a question about Bob.
When no examined hit holds a named word the rule does not apply (the name is unknown, or the
hits are not about it) and the list stands.

The rule only ever empties a list the floors found relevant; it never admits or reorders.
The constants are fitted for the default MiniLM model (docs/decisions.md gives the numbers).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from memorywire.core.textsearch import STOP_WORDS, query_terms

__all__ = [
    "EVIDENCE_DEPTH",
    "MASKED_MIN_COSINE",
    "MASKED_MIN_GAP",
    "MaskedCheck",
    "NamedQuery",
    "has_evidence",
    "masked_check",
    "masked_evidence",
    "named_query",
    "named_words",
    "same_word",
]

#: How many of the best hits the rule examines, whatever ``k`` the caller asked for, so
#: "nothing relevant" does not depend on ``k``.
EVIDENCE_DEPTH = 10
#: The masked question answers something beyond the name when its best cosine with a named
#: hit's vector reaches ``MASKED_MIN_COSINE`` ... (default MiniLM)
MASKED_MIN_COSINE = 0.275
#: ... or when that best cosine stands ``MASKED_MIN_GAP`` above the median over the named
#: hits: a true answer stands out among the person's memories, while "What is Alice's shoe
#: size?" is equally far from all of them. Both fitted on the dev probes only
#: (corpus/queries.jsonl and corpus/named_dev.jsonl; docs/decisions.md): the largest values
#: that keep every dev paraphrase, less a 0.005 margin.
MASKED_MIN_GAP = 0.115

_TOKEN = re.compile(r"[^\W_]+", re.UNICODE)
_CAPITAL = re.compile(r"[^\W\d_][^\W_]*", re.UNICODE)


@dataclass(frozen=True)
class MaskedCheck:
    """What is left to decide with the model: the question without its names, and the
    positions (in the examined hits) of the hits that hold a name."""

    masked: str
    rows: tuple[int, ...]


@dataclass(frozen=True)
class NamedQuery:
    """A query split into the names it mentions and the rest of what it asks."""

    named: frozenset[str]
    rest: tuple[str, ...]
    masked: str


def named_words(query: str) -> frozenset[str]:
    """Lower-cased words the query writes with a capital letter, as names are written.

    A capital that only starts the question ("What", "Tell") is a name only when the word is
    not a stop word; the caller still checks that a hit holds it.
    """
    out: set[str] = set()
    for m in _CAPITAL.finditer(query):
        word = m.group(0)
        low = word.lower()
        if word[0].isupper() and len(low) >= 2 and low not in STOP_WORDS:
            out.add(low)
    return frozenset(out)


def _tokens(text: str) -> set[str]:
    return {_norm(t) for t in _TOKEN.findall(text.lower())}


def _norm(word: str) -> str:
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def same_word(a: str, b: str) -> bool:
    """Light stemming for evidence: equal after dropping a plural ``s``, one the prefix of
    the other (the shorter at least four letters), or five shared leading letters."""
    a, b = _norm(a), _norm(b)
    if a == b:
        return True
    short, long_ = (a, b) if len(a) <= len(b) else (b, a)
    if len(short) >= 4 and long_.startswith(short):
        return True
    return len(short) >= 5 and long_[:5] == short[:5]


def named_query(query: str, texts: Sequence[str]) -> NamedQuery | None:
    """The query's known names (held by one of ``texts``) and the rest, or ``None`` when it
    names nothing known or asks for nothing beyond the names."""
    candidates = named_words(query)
    if not candidates:
        return None
    held = [_tokens(t) for t in texts]
    named = frozenset(w for w in candidates if any(_norm(w) in h for h in held))
    if not named:
        return None
    rest = tuple(t for t in query_terms(query) if t not in named)
    if not rest:
        return None
    masked = _TOKEN.sub(lambda m: "" if m.group(0).lower() in named else m.group(0), query)
    return NamedQuery(named, rest, " ".join(masked.replace("'s", " ").split()))


def masked_check(query: str, texts: Sequence[str]) -> MaskedCheck | None:
    """The part of the rule that needs no model: ``None`` when the list stands (no known
    name, no hit holds one, nothing asked beyond the names, or a named hit shares a rest
    word); otherwise the masked question to embed and which hits to compare it with.
    ``texts`` are the full-text keys of the best ``EVIDENCE_DEPTH`` hits, best first."""
    nq = named_query(query, texts)
    if nq is None:
        return None
    rows: list[int] = []
    for i, text in enumerate(texts):
        toks = _tokens(text)
        if not any(_norm(w) in toks for w in nq.named):
            continue
        if any(same_word(r, t) for r in nq.rest for t in toks):
            return None
        rows.append(i)
    if not rows or not nq.masked:
        return None
    return MaskedCheck(nq.masked, tuple(rows))


def masked_evidence(masked: npt.NDArray[np.float32],
                    vectors: Sequence[npt.NDArray[np.float32]]) -> bool:
    """Whether the masked question's vector is close to one named hit's stored vector
    (``MASKED_MIN_COSINE``) or singles one out among them (``MASKED_MIN_GAP`` above their
    median). Vectors are unit length, so the products are cosines."""
    if not vectors:
        return True
    sims = np.stack([np.asarray(v, dtype=np.float32) for v in vectors]) @ np.asarray(
        masked, dtype=np.float32)
    top = float(np.max(sims))
    return top >= MASKED_MIN_COSINE or top - float(np.median(sims)) >= MASKED_MIN_GAP


def has_evidence(
    query: str,
    texts: Sequence[str],
    vector_of: Callable[[int], npt.NDArray[np.float32]],
    embed: Callable[[str], npt.NDArray[np.float32]],
) -> bool:
    """The whole rule for a store with a synchronous model: keep the list (``True``) or
    answer "nothing relevant". ``vector_of(i)`` is hit ``i``'s stored vector; ``embed`` is
    called at most once, only when no named hit gives lexical evidence."""
    check = masked_check(query, texts)
    if check is None:
        return True
    return masked_evidence(embed(check.masked), [vector_of(i) for i in check.rows])

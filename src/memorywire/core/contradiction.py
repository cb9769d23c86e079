"""Contradiction candidates without an LLM: "same subject, different value".

Two statements contradict when they talk about the same subject but give it a different
value, or when they agree except for a negation. Words are split (stop words dropped) into
*subject* words (lower-case: "favourite", "airline", "lives", "cats") and *value* words
(names and numbers: capitalised after the first word, or holding a digit: "KLM", "Berlin",
"3", "S24"). Subject words are normalised before they are compared, so that the ways agents
phrase one slot meet: a plural ``s`` is dropped, and the words of a few common slots share a
class (``_SLOTS``: "favourite"/"prefers"/"loves", "lives"/"moved"/"home", "works"/"job"/
"employer", "fly"/"airline"). *Change cues* ("now", "switched", "changed", "new", "instead")
say that a statement replaces something; they are not subject words.

A candidate is found by one of three word rules, each naming itself in the why string:

- **negation**: the subjects overlap (Jaccard ≥ :data:`MIN_SIMILARITY`) and exactly one side
  is negated;
- **frame**: both sentences are the same words except for one short span each (≤
  :data:`MAX_VALUE_WORDS` words) and the shared words hold at least two subject words: "the
  user's job title is *principal architect*" / "… is *team lead*" (lower-case values are
  invisible to the word split);
- **value**: the subjects overlap enough and each side has a word the other lacks, neither
  more than :data:`MAX_VALUE_WORDS` (a value is a name, a number, a short phrase; a long
  difference is another statement, a pure addition is more detail, not a change). Overlap is
  Jaccard ≥ :data:`MIN_SIMILARITY`; when either statement carries a change cue it is enough
  that the smaller subject is at least half inside the larger one ("switched to Marriott
  hotels" against "favourite hotel chain is Hilton"), as long as a specific word (not a
  preference word) is shared.

With ``closeness`` (the cosine of each stored memory's vector to the new one's, from a store
that holds vectors) a fourth rule, **meaning** (:mod:`core.contradiction_meaning`), may add
the one closest memory: it catches paraphrases that share no slot word. A statement that adds
("also", "too", "another") replaces nothing under any rule but negation.

Unrelated near neighbours share the frame but not the subject ("favourite airline is KLM" /
"favourite hotel chain is Hilton": one subject word in four), so they stay below the bar.
Known blind spots: a paraphrase naming the slot with words outside the classes and sharing
none ("favourite food is tacos" → "now loves lasagne most") is missed, and two subjects
sharing a frame word can be confused. The why string names what differs, for the reviewer.
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from operator import itemgetter
from typing import NamedTuple

from memorywire.core.contradiction_meaning import ADDITIVE, closest_changed, value_kind
from memorywire.core.text_lru import TextLru

__all__ = ["MIN_SIMILARITY", "STATEMENTS_CACHED", "STATEMENT_CHARS_CACHED", "Candidate",
           "find_conflicts", "judge", "subject_terms"]

MIN_SIMILARITY = 0.4
MAX_VALUE_WORDS = 3

_WORD = re.compile(r"[A-Za-z0-9]+(?:[.'-][A-Za-z0-9]+)*")
_NEGATIONS = frozenset({"not", "no", "never", "don't", "doesn't", "isn't", "didn't", "won't",
                        "aren't", "wasn't", "cannot", "can't", "nor", "without"})
_STOP = frozenset(" ".join((
    "a an the is are was were be been being am of to in on at for with by from and or as that",
    "this these those it its it's user user's users he she they we i you his her their our my",
    "your me him them has have had do does did will would should can could also",
    "just still then there here so very really most",
)).split())
#: Words saying a statement replaces an earlier one; not about any subject.
_CUES = frozenset(" ".join((
    "now currently switched switch changed change changes new newly instead anymore longer",
    "moved since lately recently became become turned days",
)).split())
#: Words that name one slot in different ways; each maps to its class name.
_SLOTS = {w: cls for cls, words in {
    "=pref": "favourite favorite prefer prefers preferred love loves loved like likes enjoy "
             "enjoys",
    "=home": "live lives living home based resides reside address",
    "=work": "work works working job employer employed company",
    "=fly": "fly flies flying flight flights airline airlines",
    "=role": "promoted position role",
}.items() for w in words.split()}
#: Two-word names of a slot, read before single words ("job title" is not "job").
_COMPOUNDS = {("job", "title"): "=role"}
#: Slot words that also say the value changed ("was promoted to").
_SLOT_CUES = frozenset({"promoted"})
#: Classes too generic to count as a shared subject on their own.
_GENERIC = frozenset({"=pref"})

#: The words of each specific slot class, for a full-text search of a subject.
_CLASS_WORDS: dict[str, tuple[str, ...]] = {}
for _word, _cls in _SLOTS.items():
    if _cls not in _GENERIC:
        _CLASS_WORDS[_cls] = (*_CLASS_WORDS.get(_cls, ()), _word)
#: First words of the compounds (one set lookup per token before the pair's).
_COMPOUND_FIRST = frozenset(first for first, _ in _COMPOUNDS)
#: Each function word's role in a statement, one lookup per token: the first of a slot cue,
#: a negation, a change cue or a stop word that the word is (the order _parts tests them in).
_STOPPED, _CUE, _NEGATION, _SLOT_CUE = range(4)
_ROLE: dict[str, int] = {
    **dict.fromkeys(_STOP, _STOPPED), **dict.fromkeys(_CUES, _CUE),
    **dict.fromkeys(_NEGATIONS, _NEGATION), **dict.fromkeys(_SLOT_CUES, _SLOT_CUE)}
#: A token holding a digit (tokens are ASCII: see _WORD).
_DIGIT = re.compile(r"[0-9]").search
#: Each word of a two-word slot name, with its class ("title" of "job title").
_COMPOUND_OF = {w: cls for pair, cls in _COMPOUNDS.items() for w in pair}


@dataclass(frozen=True)
class Candidate:
    id: str
    similarity: float
    why: str


class _Parsed(NamedTuple):
    """A statement as the rules read it. Built from :func:`_parts` on every use, not cached
    itself: see there."""

    words: tuple[str, ...]
    subject: frozenset[str]
    values: frozenset[str]
    negated: bool
    cue: bool
    #: Lower-case words closing the sentence after its last function word ("… is *team
    #: lead*", "… promoted to *director*"): the object, a value unless the other side has it
    #: as a subject word.
    tail: frozenset[str]
    #: Every lower-case word that is not a stop word (the frame rule needs two shared).
    content: frozenset[str]
    #: Subject and value words less the slot classes: what the value rule compares (kept
    #: because every comparison needs it).
    terms: frozenset[str]
    #: The first word when it is capitalised and no function word: a value that opens the
    #: sentence ("Radiohead is the user's top artist now"), which ``values`` leaves out.
    lead: frozenset[str]
    #: Says it adds to what is known ("also", "too", "another"): no value is replaced.
    additive: bool


@lru_cache(maxsize=16384)
def _norm(low: str) -> str:
    """A subject word's normal form (cached: a scope's vocabulary is small and every parse
    normalises each of its words, some twice)."""
    if low in _SLOTS:
        return _SLOTS[low]
    if len(low) > 3 and low.endswith("s") and not low.endswith("ss"):
        low = low[:-1]
    return _SLOTS.get(low, low)


_NONE: frozenset[str] = frozenset()
#: :class:`_Parsed` with tuples for its sets: what :func:`_parts` caches.
_Parts = tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...], bool, bool, tuple[str, ...],
               tuple[str, ...], tuple[str, ...], tuple[str, ...], bool]


def _parse(text: str) -> _Parsed:
    """Content words split into *subject* words (lower-case, normalised) and *value* words
    (names and numbers: capitalised after the first word, or holding a digit)."""
    return _reading(_parts(text))


def _reading(parts: _Parts) -> _Parsed:
    """The :class:`_Parsed` of a cached :func:`_parts`."""
    words, subject, values, negated, cue, tail, content, terms, lead, additive = parts
    # tuple.__new__: a NamedTuple's own __new__ is one more Python call per statement
    return tuple.__new__(_Parsed, (
        words, frozenset(subject), frozenset(values) if values else _NONE, negated, cue,
        frozenset(tail) if tail else _NONE, frozenset(content), frozenset(terms),
        frozenset(lead) if lead else _NONE, additive))


#: Statements whose reading :func:`_parts` keeps, and the characters they may hold in all
#: (:mod:`memorywire.core.text_lru`). A write compares itself with a few memories spread over
#: its whole scope, so the cache must hold a scope's texts for a write's cost not to grow with
#: the scope: with room for 65,536, every batch into a scope past that reparsed tens of
#: thousands of statements its predecessors had read (issue 35, flat35). 131,072 holds a
#: 100k-memory scope of one-line facts; 16M characters (a parse holds 10 to 20 bytes a
#: character) keeps a scope of long replies from taking gigabytes.
STATEMENTS_CACHED = 1 << 17
STATEMENT_CHARS_CACHED = 1 << 24


def _parse_parts(text: str) -> _Parts:
    """:func:`_parse`'s reading of ``text``, its sets as tuples (their order means nothing).

    Cached as tuples of strings because the garbage collector stops tracking those, where it
    tracks every frozenset for as long as it lives: a cache of parsed statements made of
    frozensets held about seven tracked objects an entry, each entry promoted to the oldest
    generation, and in a scope too large for the cache (every write's candidates spread
    over it) the misses refilled it batch after batch, so the collector walked the whole
    cache over and over; the collections grew with the scope (docs/benchmarks.md,
    ingest35b). Making the sets again on each use costs less."""
    tokens = _WORD.findall(text)
    subject, values, negated, cue = set(), set(), False, False
    lows = [t.lower() for t in tokens]
    skip = False
    for n, tok in enumerate(tokens):
        low = lows[n]
        if skip:
            skip = False
            continue
        if low in _COMPOUND_FIRST and (low, lows[n + 1] if n + 1 < len(lows) else "") \
                in _COMPOUNDS:
            subject.add(_COMPOUNDS[(low, lows[n + 1])])
            skip = True
            continue
        role = _ROLE.get(low)
        if role is None:  # a content word (most are)
            if (n > 0 and tok[0].isupper()) or (not tok.isalpha() and _DIGIT(tok)):
                values.add(low)
            else:
                subject.add(_norm(low))
        elif role == _SLOT_CUE:
            subject.add(_SLOTS[low])
            cue = True
        elif role == _NEGATION:
            negated = True
        elif role == _CUE:
            cue = True
    end = len(lows)
    while end and lows[end - 1] in _STOP:
        end -= 1
    start = end
    while start and not (lows[start - 1] in _STOP or lows[start - 1] in _CUES
                         or lows[start - 1] in _NEGATIONS):
        start -= 1
    tail = {_norm(w) for w in lows[start:end]} & subject if end - start <= MAX_VALUE_WORDS \
        else set()
    return (tuple(lows), tuple(subject), tuple(values), negated, cue,
            tuple(tail if subject - tail else ()), tuple(set(lows).difference(_STOP)),
            tuple(w for w in subject | values if not w.startswith("=")),
            tuple(lows[:1] if tokens and tokens[0][0].isupper()
                  and lows[0] not in _STOP and lows[0] not in _CUES
                  and lows[0] not in _NEGATIONS else ()),
            not ADDITIVE.isdisjoint(lows))


_parts = TextLru(_parse_parts, STATEMENTS_CACHED, STATEMENT_CHARS_CACHED)


def _frame(a: _Parsed, b: _Parsed) -> tuple[str, str, str] | None:
    """``(frame words, old span, new span)`` when the sentences differ in one short span."""
    return _frame_of(a.words, b.words, a.values)


def _frame_of(x: tuple[str, ...], y: tuple[str, ...],
              values: Iterable[str]) -> tuple[str, str, str] | None:
    """:func:`_frame` on the old sentence's words and values and the new one's words (what
    a scan has without building the old side's sets)."""
    lx, ly = len(x), len(y)
    if lx - ly > MAX_VALUE_WORDS - 1 or ly - lx > MAX_VALUE_WORDS - 1:
        return None  # the spans differ in length by as much: one is empty or too long
    n = min(lx, ly)
    p = 0
    while p < n and x[p] == y[p]:
        p += 1
    s = 0
    while s < n - p and x[-1 - s] == y[-1 - s]:
        s += 1
    old, new = x[p:lx - s], y[p:ly - s]
    if not old or not new or len(old) > MAX_VALUE_WORDS or len(new) > MAX_VALUE_WORDS:
        return None
    if any(w in _NEGATIONS or w in _CUES for w in old + new):
        return None
    if s and not frozenset(x[lx - s:]).isdisjoint(values):
        return None  # the same value after a different word: another slot, not a new value
    kept = [w for w in x[:p] + x[lx - s:] if w not in _STOP and w not in _NEGATIONS]
    if len({_norm(w) for w in kept} - _GENERIC) < 2:
        return None
    return " ".join(kept), " ".join(old), " ".join(new)


def _subjects(a: _Parsed, b: _Parsed) -> tuple[frozenset[str], frozenset[str]]:
    """Each side's subject words less the words of its tail the other side lacks (those
    are the value)."""
    return a.subject - (a.tail - b.subject), b.subject - (b.tail - a.subject)


def _overlap(sa: frozenset[str], sb: frozenset[str], cue: bool) -> float:
    """Jaccard of the subjects, or (after a change cue) the share of the smaller subject
    inside the larger; 0 unless a specific (not only a preference) word is shared."""
    shared = sa & sb
    if not shared - _GENERIC:
        return 0.0
    jaccard = len(shared) / len(sa | sb)
    if not cue:
        return jaccard
    contained = len(shared) / min(len(sa), len(sb))
    return max(jaccard, contained / 2 if contained < 1 else MIN_SIMILARITY)


def judge(old: str, new: str) -> tuple[float, str] | None:
    """``(similarity, why)`` when ``new`` looks like a changed value of ``old``; the
    similarity is the overlap of their subject words (see the module doc)."""
    a, b = _parse(old), _parse(new)
    scored = _score(a, b)
    return None if scored is None else (scored[0], _why(a, b, scored[1]))


def _score(a: _Parsed, b: _Parsed) -> tuple[float, tuple[str, str, str] | None] | None:
    """The similarity (and the frame, when the frame rule found it) when ``b`` looks like a
    changed value of ``a`` (see :func:`judge`); split from the why string so a scan builds
    strings only for the candidates it keeps."""
    frame = _frame(a, b) if a.negated == b.negated and not b.additive else None
    if frame is not None:
        return max(len(a.subject & b.subject) / max(len(a.subject | b.subject), 1),
                   MIN_SIMILARITY), frame
    sa, sb = _subjects(a, b)
    if not sa or not sb:
        return None
    sim = _overlap(sa, sb, a.cue or b.cue)
    if sim < MIN_SIMILARITY:
        return None
    if a.negated != b.negated:
        return sim, None
    if b.additive:
        return None  # "also plays the guitar": one more value, not another one
    old_only, new_only = a.terms - b.terms, b.terms - a.terms
    if not old_only or not new_only:
        return None  # identical, or only added detail: not a different value
    if len(old_only) > MAX_VALUE_WORDS or len(new_only) > MAX_VALUE_WORDS:
        return None
    return sim, None


def _score_parts(p: _Parts, b: _Parsed) -> tuple[float, tuple[str, str, str] | None] | None:
    """:func:`_score` of ``_reading(p)`` against ``b``, read from the old side's cached
    tuples without building its sets: a scan scores every related candidate of every write
    (in a look-alike scope, every candidate) and keeps five, and building each old side's
    sets was much of that (docs/benchmarks.md, ingest35c). The same integers go into the
    same divisions, so the similarity is the same float: the subjects less their tails
    share exactly what the whole subjects share (a dropped tail word is one the other side
    lacks), and each count follows from the other side's set. ``test_contradiction_fast``
    holds it to :func:`_score` on every pair of a corpus and on a real store's writes."""
    words, subject, values, negated, cue, tail, _, terms, _, _ = p
    other = b.subject
    if negated == b.negated and not b.additive:
        frame = _frame_of(words, b.words, values)
        if frame is not None:
            both = len(other.intersection(subject))
            return max(both / max(len(subject) + len(other) - both, 1), MIN_SIMILARITY), frame
    # each side's subject less its tail words the other side lacks
    size_a = len(subject) - len(tail) + len(other.intersection(tail)) if tail else len(subject)
    size_b = len(other) - len(b.tail) + len(b.tail.intersection(subject)) if b.tail \
        else len(other)
    if not size_a or not size_b:
        return None
    shared = other.intersection(subject)
    if not shared - _GENERIC:
        return None  # _overlap's 0.0, under MIN_SIMILARITY
    jaccard = len(shared) / (size_a + size_b - len(shared))
    if cue or b.cue:
        contained = len(shared) / min(size_a, size_b)
        sim = max(jaccard, contained / 2 if contained < 1 else MIN_SIMILARITY)
    else:
        sim = jaccard
    if sim < MIN_SIMILARITY:
        return None
    if negated != b.negated:
        return sim, None
    if b.additive:
        return None
    new_terms = b.terms
    old_only = len(terms) - len(new_terms.intersection(terms))
    new_only = len(new_terms) - (len(terms) - old_only)
    if not old_only or not new_only or old_only > MAX_VALUE_WORDS or new_only > MAX_VALUE_WORDS:
        return None
    return sim, None


def _why(a: _Parsed, b: _Parsed, frame: tuple[str, str, str] | None) -> str:
    """What differs, for the reviewer, of a pair :func:`_score` kept (with its frame)."""
    if frame is not None:
        return f"same frame ({frame[0]}), value differs: {frame[1]} → {frame[2]}"
    sa, sb = _subjects(a, b)
    about = ", ".join(sorted(w.lstrip("=") for w in sa & sb))
    if a.negated != b.negated:
        return f"same subject ({about}), negation differs"
    old_only, new_only = sorted(a.terms - b.terms), sorted(b.terms - a.terms)
    kind = "number" if any(w.isdigit() for w in old_only + new_only) else "value"
    return f"same subject ({about}), {kind} differs: {' '.join(old_only)} → " \
           f"{' '.join(new_only)}"


def find_conflicts(new: str, stored: Iterable[tuple[str, str]], limit: int = 5, *,
                   closeness: Mapping[str, float] | None = None) -> list[Candidate]:
    """The stored ``(id, text)`` pairs that ``new`` seems to contradict, most similar first.

    ``closeness`` (cosine of each stored memory's vector to the new one's, from a store that
    holds vectors) adds the meaning rule (:mod:`core.contradiction_meaning`) for the one
    closest memory; without it only the word rules run. Writes the why string only for the
    ``limit`` kept, and stops scoring pairs that cannot be kept: no similarity exceeds 1.0
    and ties go to the smaller id, so once ``limit`` pairs at 1.0 are kept a pair with a
    larger id cannot enter. In a scope of look-alike notes (an agent's log) most pairs
    qualify, at 1.0, and scoring them all was most of a remember's scan; the result is the
    same as scoring every pair.

    With nothing stored there is nothing to contradict, and ``new`` is not parsed: the first
    batch into a new scope (a conversation written at once) was paying a parse
    per memory, about half of what its write cost in Python (docs/benchmarks.md, ingest19).
    """
    pairs = list(stored)
    if not pairs:
        return []
    b = _parse(new)
    subject, words = b.subject - _GENERIC, b.content
    texts = [(id, _parts(text)) for id, text in pairs]
    # Pairs that share no subject word and fewer than two words (the common case) are
    # decided without building a verdict (nor their sets: the tuples answer that); the rest
    # are scored in id order (a stable sort: equal ids keep their order, as ``nsmallest``
    # does), so once ``limit`` pairs at 1.0, the highest similarity there is, are kept no
    # later pair can outrank them.
    related = [(id, p) for id, p in texts
               if not subject.isdisjoint(p[1]) or len(words.intersection(p[6])) >= 2]
    scored = []
    top = 0
    for id, p in sorted(related, key=itemgetter(0)):
        verdict = _score_parts(p, b)
        if verdict is not None:
            neg = -round(verdict[0], 4)
            scored.append((neg, id, p, verdict[1]))
            top += neg == -1.0
            if top == limit > 0:
                break  # a look-alike scope (an agent's log): the rest cannot be kept
    out = [Candidate(id=id, similarity=-neg, why=_why(_reading(p), b, frame))
           for neg, id, p, frame in heapq.nsmallest(limit, scored, key=lambda t: (t[0], t[1]))]
    if closeness and len(out) < limit:
        near = closest_changed(b, _closest_of_kind(b, texts, closeness), closeness)
        if near is not None and all(c.id != near[0] for c in out):
            out.append(Candidate(id=near[0], similarity=round(near[1], 4), why=near[2]))
    return out


def _closest_of_kind(new: _Parsed, texts: Sequence[tuple[str, _Parts]],
                     closeness: Mapping[str, float]) -> list[tuple[str, _Parsed]]:
    """The stored statement :func:`closest_changed` would weigh of all ``texts`` (the
    closest with a cosine whose value is of ``new``'s kind, the first of equals), alone, so
    only the statements looked at on the way are read into sets, not every candidate; the
    answer is the one a call with every candidate gives."""
    if new.additive:
        return []
    near = [(sim, n) for n, (id, _) in enumerate(texts) if (sim := closeness.get(id)) is not None]
    if any(sim != sim for sim, _ in near):  # NaN orders nothing: weigh them all, in order
        return [(id, _reading(p)) for id, p in texts]
    kind = value_kind(new)
    for _, n in sorted(near, key=lambda t: (-t[0], t[1])):
        old = _reading(texts[n][1])
        if value_kind(old) == kind:
            return [(texts[n][0], old)]
    return []


def subject_terms(text: str, limit: int = 12) -> list[str]:
    """The words a full-text search for what ``text`` might contradict looks for: its subject
    words as written, and every word of a specific slot class one of them names ("flies"
    also looks for "airline"), first seen first, at most ``limit``. Not its values: a
    changed statement gives another one, and a statement sharing only the value is no
    conflict. Every word rule needs a shared subject word or two shared words, so a stored
    memory sharing none of these is one only the meaning rule can name."""
    # the cached tuples, not _parse's sets: a few membership tests need no sets built
    words_of, subject, values = _parts(text)[:3]
    words: dict[str, None] = {}
    classes: dict[str, None] = {}
    for low in words_of:
        if low in _STOP or low in _CUES or low in _NEGATIONS or low in values:
            continue
        for norm in (_norm(low), _COMPOUND_OF.get(low)):
            if norm is not None and norm in subject:
                words[low] = None
                classes.update(dict.fromkeys(_CLASS_WORDS.get(norm, ())))
    return list({**words, **classes})[:limit]

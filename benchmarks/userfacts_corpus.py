"""The per-user fact corpus (``corpus/userfacts*.jsonl``): written here, one person at a time.

Sixteen people, each one scope (``user_id``) of 20 memories: 8 about the person (3 semantic,
2 episodic, 1 procedural, 2 emotional) and 12 everyday episodic events ("filler"). Every
person has 10 questions answered by one memory (the 8 person memories and 2 of the events)
and 4 *no-match probes*: questions about that person on a topic none of their memories holds
("What is Marta's blood type?"), whose right answer is nothing.

A question shares no content word with its answer: after stop words (the store's full-text
list and Lucene's) and Porter stemming, the only word a question and its memory may have in
common is the scope's subject, the person's name or "user" — the word every memory of the
scope shares. It must be answered by meaning ("What is Marta's trade?" for "Marta works as a
carpenter"). ``--check`` fails on any question that breaks this (naming the words).

Phrasings. Every memory and question is written twice from one template: with the person's
name ("Marta works as ...", "What is Marta's trade?") and in mem0's style ("The user works as
...", "What is the user's trade?"), so the two phrasings compare on the same facts. A
procedural memory is a state machine and reads the same in both.

The people are data (``corpus/userfacts_people.json``): per person the name and pronouns,
8 (memory template or procedure, question) pairs in the type order above, 12 event
templates, the questions of two events (by memory number, 9-20) and 4 probes. A template
writes the subject as ``{S}``/``{s}`` (sentence start / inside), the possessive as
``{P}``/``{p}``, and ``{their}``/``{obj}`` for the pronouns; a procedure is a name, its
states and one trigger per step.

Split. People alternate in the order listed: the 1st, 3rd, ... are ``dev``, the 2nd, 4th,
... ``heldout`` (8 each; every file line carries its ``split``). Rules are tuned on dev
only; held-out is reported, never tuned on.

    python benchmarks/userfacts_corpus.py          # (re)write the two files
    python benchmarks/userfacts_corpus.py --check  # files up to date, no question leaks a word
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import snowballstemmer
from _retrieval import BM25_STOP_WORDS

from memorywire.core.content import content_to_storage, embed_text
from memorywire.core.textsearch import STOP_WORDS
from memorywire.wire.models import MemoryType

HERE = Path(__file__).resolve().parent
MEMORIES = HERE / "corpus" / "userfacts.jsonl"
QUESTIONS = HERE / "corpus" / "userfacts_questions.jsonl"
#: The people, as templates: what this script renders (and checks) into the two files above.
PEOPLE_FILE = HERE / "corpus" / "userfacts_people.json"
PHRASINGS = ("name", "user")
#: The store's full-text stop list and Lucene's (the BM25 baseline's).
STOPS = STOP_WORDS | BM25_STOP_WORDS
_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_PERSON_TYPES = ("semantic", "semantic", "semantic", "episodic", "episodic", "procedural",
                 "emotional", "emotional")


def proc(name: str, states: list[str], triggers: list[str]) -> dict[str, Any]:
    """A straight-line procedure: ``states`` in order, one trigger per step."""
    if len(triggers) != len(states) - 1:
        raise ValueError(f"{name}: one trigger per step")
    return {"name": name, "initial": states[0], "states": states,
            "transitions": [{"trigger": t, "source": a, "dest": b}
                            for t, a, b in zip(triggers, states[:-1], states[1:], strict=True)]}


@dataclass(frozen=True)
class Person:
    key: str
    name: str
    poss: str  # "her" / "his" in the name phrasing ("their" in mem0's)
    obj: str  # "her" / "him"
    #: 8 (template or procedure, question): the types of ``_PERSON_TYPES``, in order.
    about: list[tuple[str | dict[str, Any], str]]
    filler: list[str]  # 12 everyday events (episodic)
    filler_questions: dict[int, str]  # memory number (9-20) -> question
    probes: list[str]  # 4 questions about this person that nothing answers


def _person(doc: dict[str, Any]) -> Person:
    about: list[tuple[str | dict[str, Any], str]] = []
    for item in doc["about"]:
        machine = item.get("procedure")
        about.append((proc(machine["name"], machine["states"], machine["triggers"])
                      if machine is not None else item["content"], item["question"]))
    return Person(doc["key"], doc["name"], doc["poss"], doc["obj"], about, doc["filler"],
                  {int(n): q for n, q in doc["filler_questions"].items()}, doc["probes"])


def _people() -> list[Person]:
    with PEOPLE_FILE.open(encoding="utf-8") as fh:
        return [_person(doc) for doc in json.load(fh)]


PEOPLE: list[Person] = _people()


def _words(person: Person, phrasing: str) -> dict[str, str]:
    if phrasing == "name":
        return {"S": person.name, "s": person.name, "P": f"{person.name}'s",
                "p": f"{person.name}'s", "their": person.poss, "obj": person.obj}
    return {"S": "The user", "s": "the user", "P": "The user's", "p": "the user's",
            "their": "their", "obj": "them"}


def _render(template: str, person: Person, phrasing: str) -> str:
    return template.format(**_words(person, phrasing))


def split_of(index: int) -> str:
    """People alternate in list order: even positions are dev, odd ones held out."""
    return "dev" if index % 2 == 0 else "heldout"


def build() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Every memory line and every question line, both phrasings."""
    memories: list[dict[str, Any]] = []
    questions: list[dict[str, Any]] = []
    for index, person in enumerate(PEOPLE):
        if len(person.about) != 8 or len(person.filler) != 12 or len(person.probes) != 4:
            raise ValueError(f"{person.key}: 8 person memories, 12 events and 4 probes")
        split = split_of(index)
        for phrasing in PHRASINGS:
            base = {"user": person.key, "split": split, "phrasing": phrasing}
            for n, ((content, question), mtype) in enumerate(
                    zip(person.about, _PERSON_TYPES, strict=True), start=1):
                mid = f"{person.key}-{n:02d}"
                text = content if isinstance(content, dict) else _render(content, person,
                                                                          phrasing)
                memories.append({"id": mid, **base, "type": mtype, "about": "person",
                                 "content": text})
                questions.append({"id": f"{person.key}-q{n:02d}", **base, "kind": "meaning",
                                  "type": mtype, "about": "person",
                                  "query": _render(question, person, phrasing),
                                  "relevant": [mid]})
            for n, event in enumerate(person.filler, start=9):
                mid = f"{person.key}-{n:02d}"
                memories.append({"id": mid, **base, "type": "episodic", "about": "filler",
                                 "content": _render(event, person, phrasing)})
                if n in person.filler_questions:
                    questions.append({
                        "id": f"{person.key}-q{n:02d}", **base, "kind": "meaning",
                        "type": "episodic", "about": "filler",
                        "query": _render(person.filler_questions[n], person, phrasing),
                        "relevant": [mid]})
            for n, probe in enumerate(person.probes, start=1):
                questions.append({"id": f"{person.key}-x{n}", **base, "kind": "no_match",
                                  "type": None, "about": None,
                                  "query": _render(probe, person, phrasing), "relevant": []})
    return memories, questions


def searchable_text(memory: dict[str, Any]) -> str:
    """What the store embeds and indexes for a memory (a procedure reads as its words)."""
    mtype = MemoryType(memory["type"])
    return embed_text(mtype, content_to_storage(mtype, memory["content"]))


_STEMMER = snowballstemmer.stemmer("porter")


def content_stems(text: str, subject: frozenset[str]) -> set[str]:
    """Porter stems of ``text``'s words, stop words and the scope's subject words left out."""
    words = [w for w in _WORD.findall(text.lower()) if w not in STOPS and w not in subject]
    return set(_STEMMER.stemWords(words))


def _subject(user: str) -> frozenset[str]:
    person = next(p for p in PEOPLE if p.key == user)
    return frozenset({person.name.lower(), "user"})


def leaks(memories: list[dict[str, Any]],
          questions: list[dict[str, Any]]) -> Iterator[tuple[dict[str, Any], set[str]]]:
    """Each answerable question that shares a content stem with a gold memory, and the stems."""
    text = {(m["phrasing"], m["id"]): searchable_text(m) for m in memories}
    for q in questions:
        subject = _subject(q["user"])
        asked = content_stems(q["query"], subject)
        shared = set().union(*(asked & content_stems(text[(q["phrasing"], g)], subject)
                               for g in q["relevant"]))
        if shared:
            yield q, shared


def _lines(rows: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)


def stats(memories: list[dict[str, Any]], questions: list[dict[str, Any]]) -> dict[str, Any]:
    one = [m for m in memories if m["phrasing"] == "name"]
    asked = [q for q in questions if q["phrasing"] == "name"]
    by_type: dict[str, int] = {}
    for q in asked:
        if q["kind"] == "meaning":
            by_type[q["type"]] = by_type.get(q["type"], 0) + 1
    return {"people": len(PEOPLE), "facts": len(one), "phrasings": len(PHRASINGS),
            "memory_lines": len(memories),
            "meaning_questions": sum(q["kind"] == "meaning" for q in asked),
            "no_match_probes": sum(q["kind"] == "no_match" for q in asked),
            "question_lines": len(questions), "meaning_by_type": by_type,
            "dev_people": sum(split_of(i) == "dev" for i in range(len(PEOPLE)))}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true",
                        help="fail if the files differ from this script or a question leaks")
    args = parser.parse_args(argv)
    memories, questions = build()
    bad = list(leaks(memories, questions))
    for q, shared in bad:
        print(f"leak {q['id']} ({q['phrasing']}): {q['query']!r} shares {sorted(shared)}",
              file=sys.stderr)
    wanted = {MEMORIES: _lines(memories), QUESTIONS: _lines(questions)}
    if args.check:
        stale = [p.name for p, body in wanted.items()
                 if not p.exists() or p.read_text(encoding="utf-8") != body]
        for name in stale:
            print(f"{name} is not what {Path(__file__).name} writes; run it", file=sys.stderr)
        print(json.dumps(stats(memories, questions)))
        return 1 if bad or stale else 0
    if bad:
        return 1
    for path, body in wanted.items():
        path.write_text(body, encoding="utf-8")
    print(json.dumps(stats(memories, questions)))
    return 0


if __name__ == "__main__":
    sys.exit(main())

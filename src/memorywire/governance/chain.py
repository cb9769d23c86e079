"""The hash chain of the audit log, as pure functions over plain rows.

Each entry's hash is ``sha256(prev_hash + canonical_json(entry))`` where the entry is every
column but the two hashes. The chain alone proves an entry was not edited *in isolation*;
someone who can write the file can still rewrite the tail and recompute every hash after the
change. Signed checkpoints close that gap: an exported checkpoint pins ``(seq, hash)`` under an
Ed25519 signature, so any rewrite, deletion, insertion or truncation at or before that seq is
caught by :func:`verify_entries` given the checkpoint. Entries after the newest exported
checkpoint are only as safe as the file, which is why checkpoints are taken periodically.

Verification reconstructs each row's *original* position by walking ``prev_hash`` links back to
the genesis value, so it can tell an edited row (content no longer matches its hash) from a row
that is genuine but sits at the wrong place (reordered), rows that are gone (deleted), extra
rows that claim an existing row's place (inserted), and a missing tail (truncated).
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

__all__ = [
    "GENESIS_HASH",
    "AuditEntry",
    "Checkpoint",
    "Problem",
    "VerifyReport",
    "canonical_json",
    "entry_hash",
    "sha256_hex",
    "sign_checkpoint",
    "verify_entries",
    "verify_tail",
]

GENESIS_HASH = "0" * 64


def canonical_json(value: Any) -> str:
    """One byte-exact JSON spelling: sorted keys, no spaces, UTF-8 kept as is."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def sha256_hex(data: str | bytes) -> str:
    raw = data.encode("utf-8") if isinstance(data, str) else data
    return hashlib.sha256(raw).hexdigest()


@dataclass(frozen=True)
class AuditEntry:
    """One audit row. ``details`` never holds memory content, only content hashes."""

    seq: int
    ts: int
    actor: str
    action: str
    agent_id: str | None
    memory_ids: tuple[str, ...]
    details: Mapping[str, Any]
    prev_hash: str
    hash: str

    def body(self) -> dict[str, Any]:
        """What the hash covers (everything but the two hashes)."""
        return {
            "seq": self.seq,
            "ts": self.ts,
            "actor": self.actor,
            "action": self.action,
            "agent_id": self.agent_id,
            "memory_ids": list(self.memory_ids),
            "details": dict(self.details),
        }

    def to_dict(self) -> dict[str, Any]:
        out = self.body()
        out["prev_hash"] = self.prev_hash
        out["hash"] = self.hash
        return out


def entry_hash(prev_hash: str, body: Mapping[str, Any]) -> str:
    return sha256_hex(prev_hash + canonical_json(body))


@dataclass(frozen=True)
class Checkpoint:
    """A signed statement "the entry at ``seq`` has hash ``hash``"; safe to publish."""

    seq: int
    hash: str
    signature: str
    public_key: str
    ts: int = 0

    def message(self) -> bytes:
        return canonical_json({"seq": self.seq, "hash": self.hash, "ts": self.ts}).encode("utf-8")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Checkpoint:
        return cls(
            seq=int(data["seq"]),
            hash=str(data["hash"]),
            signature=str(data["signature"]),
            public_key=str(data["public_key"]),
            ts=int(data.get("ts", 0)),
        )

    def signature_valid(self) -> bool:
        try:
            # validate=True: a lenient decode drops non-alphabet characters, so a signature
            # with junk inserted would still pass as the genuine one.
            key = Ed25519PublicKey.from_public_bytes(
                base64.b64decode(self.public_key, validate=True))
            key.verify(base64.b64decode(self.signature, validate=True), self.message())
        except (InvalidSignature, ValueError):
            return False
        return True


def public_key_b64(key: Ed25519PrivateKey | Ed25519PublicKey) -> str:
    pub = key.public_key() if isinstance(key, Ed25519PrivateKey) else key
    return base64.b64encode(pub.public_bytes(Encoding.Raw, PublicFormat.Raw)).decode("ascii")


def sign_checkpoint(private_key: Ed25519PrivateKey, seq: int, hash_: str, ts: int) -> Checkpoint:
    unsigned = Checkpoint(seq=seq, hash=hash_, signature="", public_key="", ts=ts)
    sig = private_key.sign(unsigned.message())
    return replace(
        unsigned,
        signature=base64.b64encode(sig).decode("ascii"),
        public_key=public_key_b64(private_key),
    )


@dataclass(frozen=True)
class Problem:
    """``kind`` is edited, deleted, inserted, reordered, truncated or bad_checkpoint."""

    kind: str
    seq: int
    message: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class VerifyReport:
    ok: bool
    entries: int
    last_seq: int
    first_bad_seq: int | None
    problems: tuple[Problem, ...] = ()
    checkpoints_checked: int = 0
    last_checkpoint_seq: int | None = None
    kinds: tuple[str, ...] = field(default=())

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "entries": self.entries,
            "last_seq": self.last_seq,
            "first_bad_seq": self.first_bad_seq,
            "problems": [p.to_dict() for p in self.problems],
            "checkpoints_checked": self.checkpoints_checked,
            "last_checkpoint_seq": self.last_checkpoint_seq,
            "kinds": list(self.kinds),
        }


def _original_positions(rows: Sequence[AuditEntry]) -> list[int | None]:
    """For each row, the seq it was written at if its content is genuine there, else None.

    A row's original seq is its depth in the ``prev_hash`` chain; the row is genuine at that
    depth when its hash recomputes with that seq. Depths are memoised, iteratively, because a
    log can be long.
    """
    by_hash: dict[str, int] = {}
    for i, r in enumerate(rows):
        by_hash.setdefault(r.hash, i)
    depth: dict[int, int | None] = {}

    def resolve(start: int) -> int | None:
        stack = [start]
        while stack:
            i = stack[-1]
            if i in depth:
                stack.pop()
                continue
            prev = rows[i].prev_hash
            if prev == GENESIS_HASH:
                depth[i] = 1
                stack.pop()
                continue
            parent = by_hash.get(prev)
            if parent is None or parent == i:
                depth[i] = None
                stack.pop()
                continue
            if parent in depth:
                pd = depth[parent]
                depth[i] = None if pd is None else pd + 1
                stack.pop()
            elif parent in stack:  # a cycle only a forger can build
                depth[i] = None
                stack.pop()
            else:
                stack.append(parent)
        return depth[start]

    out: list[int | None] = []
    for i, r in enumerate(rows):
        d = resolve(i)
        if d is not None:
            body = r.body()
            body["seq"] = d
            if entry_hash(r.prev_hash, body) != r.hash:
                d = None
        out.append(d)
    return out


def verify_entries(
    rows: Iterable[AuditEntry],
    checkpoints: Sequence[Checkpoint] = (),
    trusted_keys: Sequence[str] | None = None,
) -> VerifyReport:
    """Recompute the chain and compare it with the checkpoints; never raises on bad data.

    ``first_bad_seq`` is exact for tampering the chain itself reveals. When only a checkpoint
    reveals it (the tail was rewritten with fresh hashes), it is the first seq after the newest
    checkpoint that still matches: the first entry nothing vouches for any more. A missing
    tail is reported at the first missing seq.
    """
    ordered = sorted(rows, key=lambda r: r.seq)
    problems: list[Problem] = []
    origins = _original_positions(ordered)
    # Hashes something vouches for: a later entry links to it, or a valid checkpoint names it.
    referenced = {r.prev_hash for r in ordered} | {
        c.hash for c in checkpoints if c.signature_valid()
    }

    bad_seqs: set[int] = set()
    for r, o in zip(ordered, origins, strict=True):
        if o is not None:
            continue
        body = r.body()
        if entry_hash(r.prev_hash, body) != r.hash:
            problems.append(Problem("edited", r.seq, f"entry {r.seq} does not match its hash"))
            bad_seqs.add(r.seq)
        else:
            # Self-consistent but its predecessor is not the entry it was chained to: the
            # predecessor was rewritten (with a fresh hash) or removed.
            pred = max((x.seq for x in ordered if x.seq < r.seq), default=None)
            if pred is not None and pred == r.seq - 1:
                problems.append(
                    Problem("edited", pred, f"entry {pred} was rewritten; {r.seq} no longer links")
                )
                bad_seqs.add(pred)
            else:
                gap = (pred or 0) + 1
                problems.append(Problem("deleted", gap, f"entries before {r.seq} are missing"))

    # Genuine rows: original seqs must be 1..m, in order, each once.
    seen: dict[int, AuditEntry] = {}
    max_origin = 0
    prev_origin = 0
    for r, o in zip(ordered, origins, strict=True):
        if o is None:
            continue
        if o in seen:
            first = seen[o]
            # The one nothing links to (other than at the tail) is the forged extra.
            extra = r if r.hash not in referenced or first.hash in referenced else first
            problems.append(
                Problem("inserted", extra.seq, f"entry {extra.seq} claims the place of {o}")
            )
            continue
        seen[o] = r
        # Out of order, or in order under another number (a renumbered log): the row's
        # hash was computed at ``o``, so any other seq is a move.
        if o < prev_origin or o != r.seq:
            problems.append(
                Problem("reordered", min(r.seq, o), f"entry written as {o} now sits at {r.seq}")
            )
        prev_origin = max(prev_origin, o)
        max_origin = max(max_origin, o)
    missing = sorted(set(range(1, max_origin + 1)) - set(seen) - bad_seqs)
    if missing:
        problems.append(
            Problem("deleted", missing[0], f"{len(missing)} entries missing from {missing[0]}")
        )

    n_chain = len(problems)

    # Checkpoints, oldest first.
    at_seq = {r.seq: r for r in ordered}
    last_seq = ordered[-1].seq if ordered else 0
    good_cp = 0
    checked = 0
    for cp in sorted(checkpoints, key=lambda c: c.seq):
        checked += 1
        if not cp.signature_valid() or (
            trusted_keys is not None and cp.public_key not in trusted_keys
        ):
            problems.append(Problem("bad_checkpoint", cp.seq, "checkpoint signature not valid"))
            continue
        row = at_seq.get(cp.seq)
        if cp.seq == 0 and cp.hash == GENESIS_HASH:
            continue  # taken on an empty log: vouches for nothing
        if row is None and cp.seq > last_seq:
            problems.append(
                Problem(
                    "truncated",
                    last_seq + 1,
                    f"log ends at {last_seq} but a checkpoint vouches for entry {cp.seq}",
                )
            )
        elif row is None or row.hash != cp.hash:
            problems.append(
                Problem("edited", good_cp + 1, f"entries up to {cp.seq} differ from checkpoint")
            )
        else:
            good_cp = cp.seq

    # The chain pinpoints what it sees; a checkpoint only bounds where a rewrite began.
    chain_level = [p.seq for p in problems[:n_chain]]
    first_bad = min(chain_level or [p.seq for p in problems], default=None)
    kinds = tuple(sorted({p.kind for p in problems}))
    return VerifyReport(
        ok=not problems,
        entries=len(ordered),
        last_seq=last_seq,
        first_bad_seq=first_bad,
        problems=tuple(problems),
        checkpoints_checked=checked,
        last_checkpoint_seq=max((c.seq for c in checkpoints), default=None),
        kinds=kinds,
    )


@dataclass(frozen=True)
class TailReport:
    """How far a tail of the chain links from a point already verified."""

    ok: bool
    last_seq: int
    last_hash: str
    checked: int
    problem: Problem | None = None


def verify_tail(rows: Iterable[AuditEntry], seq: int, hash_: str) -> TailReport:
    """Check that ``rows`` (ordered by seq) extend the chain whose entry ``seq`` has ``hash_``.

    Each row must sit at the next seq, name the previous hash and recompute to its own hash.
    This is what makes incremental verification O(new entries): everything up to ``seq`` was
    verified before, so only the link from it onwards needs checking. It cannot see an edit
    made *behind* the verified point after it was verified; a full :func:`verify_entries`
    (or a signed checkpoint) is what catches that.
    """
    checked = 0
    for r in rows:
        checked += 1
        if r.seq != seq + 1:
            kind = "deleted" if r.seq > seq + 1 else "inserted"
            return TailReport(False, seq, hash_, checked,
                              Problem(kind, seq + 1, f"entry {seq + 1} is not where expected"))
        if r.prev_hash != hash_ or entry_hash(r.prev_hash, r.body()) != r.hash:
            return TailReport(False, seq, hash_, checked,
                              Problem("edited", r.seq, f"entry {r.seq} does not link or match"))
        seq, hash_ = r.seq, r.hash
    return TailReport(True, seq, hash_, checked)

"""The audit chain's verdicts on exact, hand-built tamperings, as pure functions over rows.

The randomized trials in test_audit_tamper.py show every tampering is *caught*; these pin
what the report *says*: the problem kind, the seq it names, ``first_bad_seq`` when only a
signed checkpoint sees the rewrite, which of two rows claiming one place is the forged one,
a checkpoint whose row is gone (edited) or beyond the end (truncated), and checkpoints
exported before they carried ``ts``.
"""

from __future__ import annotations

import base64
from dataclasses import replace
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from memorywire.governance.chain import (
    GENESIS_HASH,
    AuditEntry,
    Checkpoint,
    Problem,
    canonical_json,
    entry_hash,
    public_key_b64,
    sha256_hex,
    sign_checkpoint,
    verify_entries,
    verify_tail,
)

KEY = Ed25519PrivateKey.generate()


def _entry(seq: int, prev: str, note: str = "", *, at: int | None = None) -> AuditEntry:
    """A row written at ``seq`` (its hash covers that seq) and stored at ``at`` (default seq)."""
    body: dict[str, Any] = {"seq": seq, "ts": 1000 + seq, "actor": "svc", "action": "remember",
                            "agent_id": "A", "memory_ids": [f"m{seq}"],
                            "details": {"i": seq, "note": note}}
    h = entry_hash(prev, body)
    return AuditEntry(at if at is not None else seq, 1000 + seq, "svc", "remember", "A",
                      (f"m{seq}",), {"i": seq, "note": note}, prev, h)


def _chain(n: int) -> list[AuditEntry]:
    rows: list[AuditEntry] = []
    prev = GENESIS_HASH
    for seq in range(1, n + 1):
        rows.append(_entry(seq, prev))
        prev = rows[-1].hash
    return rows


def _rewrite_from(rows: list[AuditEntry], seq: int, note: str) -> list[AuditEntry]:
    """The attacker with file access: entry ``seq`` changed and every hash after it redone."""
    out = rows[: seq - 1]
    prev = out[-1].hash if out else GENESIS_HASH
    for r in rows[seq - 1:]:
        out.append(_entry(r.seq, prev, note if r.seq == seq else ""))
        prev = out[-1].hash
    return out


def _cp(rows: list[AuditEntry], seq: int, key: Ed25519PrivateKey = KEY) -> Checkpoint:
    return sign_checkpoint(key, seq, rows[seq - 1].hash, ts=5000 + seq)


def _kinds(problems: tuple[Problem, ...]) -> list[tuple[str, int]]:
    return [(p.kind, p.seq) for p in problems]


def test_an_untouched_chain_is_ok_and_reports_its_extent() -> None:
    rows = _chain(6)
    rep = verify_entries(reversed(rows), [_cp(rows, 2), _cp(rows, 5)], [public_key_b64(KEY)])
    assert rep.ok and rep.problems == () and rep.kinds == ()
    assert (rep.entries, rep.last_seq, rep.first_bad_seq) == (6, 6, None)
    assert (rep.checkpoints_checked, rep.last_checkpoint_seq) == (2, 5)
    assert rep.to_dict() == {
        "ok": True, "entries": 6, "last_seq": 6, "first_bad_seq": None, "problems": [],
        "checkpoints_checked": 2, "last_checkpoint_seq": 5, "kinds": []}
    empty = verify_entries([])
    assert empty.ok and (empty.entries, empty.last_seq, empty.last_checkpoint_seq) == (0, 0, None)


def test_a_tail_rewrite_only_a_checkpoint_sees_starts_after_the_last_good_checkpoint() -> None:
    rows = _chain(10)
    early, late = _cp(rows, 3), _cp(rows, 8)
    forged = _rewrite_from(rows, 5, "rewritten")
    assert verify_entries(forged).ok  # the chain alone cannot tell
    rep = verify_entries(forged, [late, early])
    assert not rep.ok and rep.kinds == ("edited",)
    assert _kinds(rep.problems) == [("edited", 4)]
    assert rep.problems[0].message == "entries up to 8 differ from checkpoint"
    assert rep.first_bad_seq == 4  # the first entry after the newest checkpoint that matches
    only_late = verify_entries(forged, [late])
    assert _kinds(only_late.problems) == [("edited", 1)] and only_late.first_bad_seq == 1


def test_the_chain_pinpoints_what_it_sees_before_the_checkpoint_bound() -> None:
    rows = _chain(8)
    cp = _cp(rows, 8)
    edited = list(rows)
    edited[5] = replace(rows[5], actor="mallory")  # hash left as it was
    rep = verify_entries(edited, [cp])
    assert _kinds(rep.problems) == [("edited", 6)]  # the checkpoint's row hash is unchanged
    assert rep.problems[0].message == "entry 6 does not match its hash"
    assert rep.first_bad_seq == 6
    rewritten = _rewrite_from(rows, 6, "x")[:6] + rows[6:]  # 6 rehashed, 7 still links to old 6
    rep = verify_entries(rewritten, [cp])
    assert _kinds(rep.problems)[0] == ("edited", 6)
    assert rep.problems[0].message == "entry 6 was rewritten; 7 no longer links"
    assert rep.first_bad_seq == 6


def test_a_deleted_row_is_named_by_the_first_missing_seq() -> None:
    rows = _chain(6)
    rep = verify_entries(rows[:2] + rows[3:])
    assert rep.problems[0] == Problem("deleted", 3, "entries before 4 are missing")
    assert rep.first_bad_seq == 3 and not rep.ok
    first_gone = verify_entries(rows[1:])
    assert first_gone.problems[0] == Problem("deleted", 1, "entries before 2 are missing")
    assert first_gone.first_bad_seq == 1


def test_the_forged_row_of_two_claiming_one_place_is_the_one_nothing_links_to() -> None:
    rows = _chain(5)
    extra_after = _entry(4, rows[2].hash, "forged", at=6)  # appended, claims place 4
    rep = verify_entries([*rows, extra_after])
    assert _kinds(rep.problems) == [("inserted", 6)]
    assert rep.problems[0].message == "entry 6 claims the place of 4"
    # Sorted first this time: the genuine 4 (now stored at 5) is linked to by the next row.
    genuine = [rows[0], rows[1], rows[2], replace(rows[3], seq=5), replace(rows[4], seq=6)]
    extra_before = _entry(4, rows[2].hash, "forged")
    rep = verify_entries([*genuine, extra_before])
    # the forgery is named, and the rows after it are still checked (5 now sits at 6)
    assert _kinds(rep.problems) == [("inserted", 4), ("reordered", 5)]
    assert rep.first_bad_seq == 4


def test_at_the_tail_a_checkpoint_decides_which_claimant_is_genuine() -> None:
    rows = _chain(4)
    forged = _entry(4, rows[2].hash, "forged")
    moved = replace(rows[3], seq=5)  # the genuine 4, pushed behind the forgery
    cp = _cp(rows, 4)
    with_cp = verify_entries([*rows[:3], forged, moved], [sign_checkpoint(KEY, 5, cp.hash, 1)])
    assert ("inserted", 4) in _kinds(with_cp.problems)
    assert ("inserted", 5) not in _kinds(with_cp.problems)
    bad_sig = replace(sign_checkpoint(KEY, 5, cp.hash, 1), ts=2)  # vouches for nothing
    without = verify_entries([*rows[:3], forged, moved], [bad_sig])
    assert ("inserted", 5) in _kinds(without.problems)


def test_a_reordered_row_is_reported_where_it_belongs() -> None:
    rows = _chain(5)
    swapped = [rows[0], rows[1], replace(rows[3], seq=3), replace(rows[2], seq=4), rows[4]]
    rep = verify_entries(swapped)
    assert [(p.kind, p.seq, p.message) for p in rep.problems] == [
        ("reordered", 3, "entry written as 4 now sits at 3"),
        ("reordered", 3, "entry written as 3 now sits at 4")]
    assert rep.first_bad_seq == 3 and rep.kinds == ("reordered",)
    first_two = verify_entries([replace(rows[1], seq=1), replace(rows[0], seq=2), *rows[2:]])
    assert _kinds(first_two.problems) == [("reordered", 1), ("reordered", 1)]


def test_a_renumbered_log_is_reported_although_every_row_is_genuine() -> None:
    """Rows keep their hashes but move to other seqs: each hash still names where it was
    written, so a consumer's "entry 3" can no longer silently mean another entry."""
    rows = _chain(4)
    shifted = [replace(r, seq=r.seq + 10) for r in rows]
    rep = verify_entries(shifted)
    assert rep.kinds == ("reordered",) and rep.first_bad_seq == 1
    assert rep.problems[0] == Problem("reordered", 1, "entry written as 1 now sits at 11")
    assert len(rep.problems) == 4 and rep.last_seq == 14


def test_a_checkpoint_whose_row_is_missing_in_the_middle_is_an_edit_not_a_truncation() -> None:
    rows = _chain(8)
    cp = _cp(rows, 5)
    rep = verify_entries(rows[:4] + rows[5:], [cp])
    assert ("edited", 1) in _kinds(rep.problems)
    assert Problem("edited", 1, "entries up to 5 differ from checkpoint") in rep.problems
    assert "truncated" not in rep.kinds
    assert rep.first_bad_seq == 5  # the chain itself sees the gap


def test_a_checkpoint_beyond_the_end_is_a_truncation_at_the_first_missing_seq() -> None:
    rows = _chain(8)
    cp = _cp(rows, 8)
    rep = verify_entries(rows[:6], [cp])
    assert rep.problems == (
        Problem("truncated", 7, "log ends at 6 but a checkpoint vouches for entry 8"),)
    assert rep.first_bad_seq == 7 and rep.kinds == ("truncated",) and rep.last_seq == 6
    assert verify_entries(rows[:8], [cp]).ok
    nothing_left = verify_entries([], [cp])
    assert nothing_left.problems == (
        Problem("truncated", 1, "log ends at 0 but a checkpoint vouches for entry 8"),)


def test_a_checkpoint_at_the_last_row_with_another_hash_is_an_edit() -> None:
    rows = _chain(4)
    forged = _rewrite_from(rows, 4, "changed")
    rep = verify_entries(forged, [_cp(rows, 2), _cp(rows, 4)])
    assert _kinds(rep.problems) == [("edited", 3)] and rep.first_bad_seq == 3


def test_a_checkpoint_on_an_empty_log_vouches_for_nothing() -> None:
    cp = sign_checkpoint(KEY, 0, GENESIS_HASH, ts=7)
    assert verify_entries([], [cp]).ok
    rep = verify_entries(_chain(2), [cp])
    assert rep.ok and rep.checkpoints_checked == 1 and rep.last_checkpoint_seq == 0
    other = sign_checkpoint(KEY, 0, "f" * 64, ts=7)  # seq 0 but not the genesis hash
    assert verify_entries(_chain(2), [other]).kinds == ("edited",)
    assert verify_entries([], [other]).kinds == ("edited",)  # nothing was cut off after 0


def test_every_checkpoint_is_checked_after_a_bad_or_an_empty_one() -> None:
    rows = _chain(6)
    forged = _rewrite_from(rows, 4, "rewritten")
    genesis = sign_checkpoint(KEY, 0, GENESIS_HASH, ts=1)
    bad = replace(_cp(rows, 2), ts=999)  # signature no longer matches
    rep = verify_entries(forged, [genesis, bad, _cp(rows, 6)])
    assert _kinds(rep.problems) == [("bad_checkpoint", 2), ("edited", 1)]
    assert rep.checkpoints_checked == 3 and rep.last_checkpoint_seq == 6


def test_bad_and_untrusted_checkpoints_are_named_and_vouch_for_nothing() -> None:
    rows = _chain(3)
    good = _cp(rows, 3)
    other_key = Ed25519PrivateKey.generate()
    stranger = _cp(rows, 3, other_key)
    rep = verify_entries(rows, [stranger], trusted_keys=[public_key_b64(KEY)])
    assert rep.problems == (Problem("bad_checkpoint", 3, "checkpoint signature not valid"),)
    assert rep.first_bad_seq == 3
    assert verify_entries(rows, [stranger]).ok  # no pinning asked: any valid signer
    assert verify_entries(rows, [good], trusted_keys=[public_key_b64(KEY)]).ok
    forged_hash = replace(good, hash="0" * 64)
    assert verify_entries(rows, [forged_hash]).kinds == ("bad_checkpoint",)
    junk = replace(good, signature=good.signature[:8] + "!" + good.signature[8:])
    assert not junk.signature_valid()
    # the key is not part of the signed message: its spelling must be checked on its own
    odd_key = replace(good, public_key=good.public_key[:5] + "*" + good.public_key[5:])
    assert not odd_key.signature_valid() and good.signature_valid()
    assert public_key_b64(KEY.public_key()) == public_key_b64(KEY) == good.public_key
    assert not replace(good, public_key="not base64").signature_valid()
    assert not replace(good, signature=base64.b64encode(b"short").decode()).signature_valid()


def test_a_checkpoint_dict_without_ts_is_read_as_an_older_export() -> None:
    rows = _chain(3)
    old = sign_checkpoint(KEY, 3, rows[2].hash, ts=0)
    exported = old.to_dict()
    assert exported == {"seq": 3, "hash": rows[2].hash, "signature": old.signature,
                        "public_key": public_key_b64(KEY), "ts": 0}
    del exported["ts"]
    back = Checkpoint.from_dict(exported)
    assert back == old and back.signature_valid()
    assert verify_entries(rows, [back]).ok
    newer = sign_checkpoint(KEY, 3, rows[2].hash, ts=99).to_dict()
    del newer["ts"]  # a ts that was signed cannot be dropped
    assert not Checkpoint.from_dict(newer).signature_valid()
    assert Checkpoint.from_dict({**old.to_dict(), "seq": "3", "ts": "0"}) == old
    assert old.message() == canonical_json({"seq": 3, "hash": rows[2].hash, "ts": 0}).encode()


def test_verify_tail_extends_a_verified_point_and_names_the_first_break() -> None:
    rows = _chain(6)
    ok = verify_tail(rows[3:], 3, rows[2].hash)
    assert (ok.ok, ok.last_seq, ok.last_hash, ok.checked, ok.problem) == (
        True, 6, rows[5].hash, 3, None)
    none = verify_tail([], 3, rows[2].hash)
    assert (none.ok, none.last_seq, none.last_hash, none.checked) == (True, 3, rows[2].hash, 0)
    gap = verify_tail(rows[4:], 3, rows[2].hash)
    assert gap.ok is False
    assert gap.problem == Problem("deleted", 4, "entry 4 is not where expected")
    assert (gap.last_seq, gap.last_hash, gap.checked) == (3, rows[2].hash, 1)
    dup = verify_tail(rows[2:], 3, rows[2].hash)
    assert dup.problem is not None and (dup.problem.kind, dup.problem.seq) == ("inserted", 4)
    assert dup.ok is False
    wrong_link = verify_tail(rows[3:], 3, rows[1].hash)
    assert wrong_link.problem == Problem("edited", 4, "entry 4 does not link or match")
    assert wrong_link.ok is False
    edited = [rows[3], replace(rows[4], actor="x"), rows[5]]
    bad = verify_tail(edited, 3, rows[2].hash)
    assert bad.ok is False
    assert bad.problem == Problem("edited", 5, "entry 5 does not link or match")
    assert (bad.last_seq, bad.last_hash, bad.checked) == (4, rows[3].hash, 2)


def test_entry_hash_covers_every_column_but_the_hashes() -> None:
    row = _chain(1)[0]
    assert row.to_dict() == {**row.body(), "prev_hash": GENESIS_HASH, "hash": row.hash}
    assert row.body()["memory_ids"] == ["m1"] and isinstance(row.body()["details"], dict)
    assert row.hash == sha256_hex(GENESIS_HASH + canonical_json(row.body()))
    assert sha256_hex(b"abc") == sha256_hex("abc") == (
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    assert canonical_json({"b": 1, "a": "é"}) == '{"a":"é","b":1}'
    for field, value in (("seq", 2), ("ts", 1), ("actor", "x"), ("action", "forget"),
                         ("agent_id", None), ("memory_ids", ()), ("details", {})):
        assert verify_entries([replace(row, **{field: value})]).kinds != (), field


def test_a_row_edited_and_moved_is_reported_where_it_was_and_where_it_is() -> None:
    rows = _chain(4)
    moved = [rows[0], rows[1], replace(rows[2], actor="mallory", seq=10), rows[3]]
    rep = verify_entries(moved)
    assert rep.problems == (Problem("edited", 10, "entry 10 does not match its hash"),
                            Problem("deleted", 3, "1 entries missing from 3"))
    assert rep.first_bad_seq == 3 and rep.kinds == ("deleted", "edited")
    first = verify_entries([replace(rows[0], actor="x", seq=9), *rows[1:]])
    assert Problem("deleted", 1, "1 entries missing from 1") in first.problems
    two = _chain(5)
    both = [two[0], replace(two[1], actor="x", seq=11), replace(two[2], actor="y", seq=12),
            two[3], two[4]]
    assert Problem("deleted", 2, "2 entries missing from 2") in verify_entries(both).problems


def test_rows_after_an_edited_one_are_still_checked() -> None:
    rows = _chain(6)
    tampered = [rows[0], replace(rows[1], actor="x"), rows[2], rows[3],
                replace(rows[5], seq=5), replace(rows[4], seq=6)]
    rep = verify_entries(tampered)
    assert _kinds(rep.problems) == [("edited", 2), ("reordered", 5), ("reordered", 5)]


def test_a_forged_cycle_of_links_is_reported_not_followed() -> None:
    a = AuditEntry(1, 1, "x", "remember", None, (), {}, "h2" * 32, "h1" * 32)
    b = AuditEntry(2, 2, "x", "remember", None, (), {}, "h1" * 32, "h2" * 32)
    rep = verify_entries([a, b])
    assert not rep.ok and rep.first_bad_seq == 1 and rep.kinds == ("edited",)


def test_problems_and_reports_serialise_for_the_cli() -> None:
    rows = _chain(3)
    rep = verify_entries(rows[:1] + rows[2:])
    assert rep.to_dict()["problems"] == [
        {"kind": "deleted", "seq": 2, "message": "entries before 3 are missing"}]
    assert rep.to_dict()["kinds"] == ["deleted"] and rep.to_dict()["ok"] is False
    assert Problem("edited", 4, "m").to_dict() == {"kind": "edited", "seq": 4, "message": "m"}


def test_a_broken_link_found_deep_in_the_walk_back_is_still_a_verdict() -> None:
    """Entry 1 gone and 2 and 3 swapped: walking back from the first stored row reaches a
    row whose predecessor is missing; every row still gets a verdict, none raises."""
    rows = _chain(4)
    rep = verify_entries([replace(rows[2], seq=2), replace(rows[1], seq=3), rows[3]])
    assert not rep.ok and rep.entries == 3 and rep.first_bad_seq == 2

"""``make demo``: the main job on the embedded default, end to end, printing what happens.

It runs offline against a fresh SQLite file with the local MiniLM model: remember → recall
(paraphrase and a query about nothing stored) → approval-gated remember (invisible) → the
reviewer's diff → approve (visible, same id) → hard forget → audit verify. Every line it prints
comes from the real call it describes; a failed expectation exits non-zero.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

from memorywire.client import Memory
from memorywire.embed import default_embedder
from memorywire.governance import GovernedStore
from memorywire.governance.actor import acting_as
from memorywire.procedural import ProcedureRunner, parse_procedure
from memorywire.store.sqlite import SqliteStore
from memorywire.store.timeline import supersede

__all__ = ["main", "run_demo"]

AGENT = "travel-assistant"
BOOK_FLIGHT = {
    "name": "book-flight",
    "initial": "searching",
    "states": ["searching", "selecting", "paying", "confirmed", "cancelled"],
    "transitions": [
        {"trigger": "found", "source": "searching", "dest": "selecting"},
        {"trigger": "chose", "source": "selecting", "dest": "paying"},
        {"trigger": "paid", "source": "paying", "dest": "confirmed"},
        {"trigger": "cancel", "source": "*", "dest": "cancelled"},
    ],
}


class DemoFailure(RuntimeError):
    pass


def _expect(ok: bool, what: str) -> None:
    if not ok:
        raise DemoFailure(what)


def _say(step: str, text: str = "") -> None:
    print(f"\n== {step}" if not text else f"   {text}")


async def run_demo(workdir: Path) -> dict[str, Any]:
    """Run every step; return a summary (used by the test that keeps this demo honest)."""
    t0 = time.perf_counter()
    embedder = default_embedder()
    inner = SqliteStore(workdir / "memory.db", embedder=embedder)
    gov = GovernedStore(
        inner, workdir / "governance.db", approval_base_url="http://127.0.0.1:8765"
    )
    mem = Memory(gov, own_store=True)
    summary: dict[str, Any] = {}
    try:
        _say(f"store: sqlite at {workdir / 'memory.db'}; embedder {embedder.name}")
        facts = [
            ("semantic", "The user is allergic to peanuts."),
            ("semantic", "The user's favourite airline is KLM."),
            ("episodic", "On Monday the user asked for a window seat to Lisbon."),
            ("emotional", "The user felt frustrated by the long layover in Frankfurt."),
        ]
        _say("remember")
        for mtype, text in facts:
            r = await mem.remember(agent_id=AGENT, user_id="u1", type=mtype, content=text)
            _say("", f"{r.id}  stores={r.stores}  {mtype}: {text}")

        _say("recall: a paraphrase")
        q = "does the traveller have any food allergies?"
        rec = await mem.recall(agent_id=AGENT, user_id="u1", query=q, k=3)
        for h in rec.results:
            _say("", f"{h.score:.4f}  {h.content}")
        _expect(bool(rec.results) and "peanut" in str(rec.results[0].content), "paraphrase")
        summary["paraphrase_top"] = rec.results[0].content

        _say("recall: something never stored (the relevance floor answers nothing)")
        none = await mem.recall(
            agent_id=AGENT, user_id="u1", query="quantum chromodynamics lattice"
        )
        _say("", f"{len(none.results)} results")
        summary["no_match_results"] = len(none.results)

        _say("approval-gated remember (content from a web page)")
        gated = await mem.remember(
            agent_id=AGENT,
            user_id="u1",
            type="semantic",
            content="The user's favourite airline is Ryanair.",
            source="web_page",
            approval_required=True,
        )
        _say("", f"id={gated.id} pending={gated.pending_approval} stores={gated.stores}")
        _say("", f"approval_url={gated.approval_url}")
        _expect(gated.pending_approval and gated.stores == [], "staged")
        hidden = await mem.recall(agent_id=AGENT, user_id="u1", query="Ryanair", k=5)
        _expect(all(h.id != gated.id for h in hidden.results), "pending invisible")
        _say("", "recall before approval does not show it")

        _say("the reviewer's view: the diff against current memory")
        review = await gov.get_review(gated.id)
        for kind in ("added", "removed", "modified"):
            for entry in review["diff"][kind]:
                _say("", f"{kind}: {entry}")
        _say("approve, as reviewer 'alice' (the writer may not approve its own write)")
        with acting_as("reviewer:alice"):
            decision = await gov.approve(gated.id, "reviewer:alice", review.get("content_hash"))
        _say("", f"status={decision.get('status')}")
        seen = await mem.recall(agent_id=AGENT, user_id="u1", query="Ryanair airline", k=5)
        _expect(any(h.id == gated.id for h in seen.results), "approved visible")
        _say("", f"recall now returns {gated.id} (same id the writer was given)")

        _say("truth over time: the reviewer accepts the supersedes? row")
        rows = [e for e in review["diff"]["modified"] if e.get("relation") == "supersedes?"]
        _expect(bool(rows) and "KLM" in str(rows[0]["content"]), "KLM flagged as contradiction")
        _say("", f"supersedes? {rows[0]['id']}: {rows[0]['content']}  ({rows[0].get('why')})")
        with acting_as("reviewer:alice"):
            await supersede(gov, AGENT, gated.id, [rows[0]["id"]], user_id="u1")
        q = "which airline does the user prefer?"
        now = await mem.recall(agent_id=AGENT, user_id="u1", query=q, k=5)
        airlines = [str(h.content) for h in now.results if "airline" in str(h.content)]
        _say("", f"recall: {airlines}")
        _expect(airlines == ["The user's favourite airline is Ryanair."], "Ryanair only")
        old = await mem.recall(agent_id=AGENT, user_id="u1", query=q, k=5,
                               include_superseded=True)
        shown = [(str(h.content), h.superseded_by) for h in old.results
                 if "airline" in str(h.content)]
        _say("", f"include_superseded: {shown}")
        _expect(any("KLM" in c and by == gated.id for c, by in shown), "KLM superseded")
        summary["current_airline"] = airlines

        _say("procedural memory: a safe FSM, stored, recalled as an object, replayed")
        proc = await mem.remember(agent_id=AGENT, type="procedural", content=BOOK_FLIGHT)
        got = await gov.get(AGENT, proc.id)
        _expect(got is not None and isinstance(got.content, dict), "procedure as object")
        assert got is not None and isinstance(got.content, dict)
        runner = ProcedureRunner(parse_procedure(got.content))
        for trig in ("found", "chose", "paid"):
            runner.fire(trig)
        await runner.persist(gov, AGENT, proc.id)
        again = await ProcedureRunner.load(gov, AGENT, proc.id)
        _say("", f"replayed found → chose → paid: state={runner.state}; stored={again.state}")
        _expect(again.state == "confirmed", "procedure state persisted")
        summary["procedure_state"] = again.state

        _say("hard forget: the agent asks, a person approves (an agent may not destroy alone)")
        f = await mem.forget(agent_id=AGENT, ids=[gated.id], hard_delete=True, reason="demo")
        _say("", f"pending={f.pending_approval} approval_id={f.approval_id}")
        _expect(bool(f.pending_approval) and f.approval_id is not None, "hard forget staged")
        assert f.approval_id is not None
        with acting_as("reviewer:alice"):
            item = await gov.get_review(f.approval_id)
            decision = await gov.approve(f.approval_id, "reviewer:alice",
                                         item.get("content_hash"))
        _say("", f"approved by alice: status={decision.get('status')}")
        gone = await mem.recall(agent_id=AGENT, user_id="u1", query="Ryanair airline", k=5)
        _expect(all(h.id != gated.id for h in gone.results), "forgotten")

        _say("audit verify")
        report = gov.verify()
        entries = gov.audit_entries(agent_id=AGENT)
        _say("", f"ok={report.get('ok')} entries={len(entries)}")
        for e in entries[-5:]:
            phase = (e.get("details") or {}).get("phase", "")
            _say("", f"#{e.get('seq')} {e.get('action')} {phase} {e.get('memory_ids')}")
        _expect(bool(report.get("ok")), "audit chain verifies")
        summary.update(audit_ok=report.get("ok"), audit_entries=len(entries))
    finally:
        await mem.aclose()
    summary["seconds"] = round(time.perf_counter() - t0, 2)
    _say(f"done in {summary['seconds']} s")
    return summary


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m memorywire.demo", description=__doc__)
    ap.add_argument("--dir", help="keep the databases here (default: a temporary folder)")
    args = ap.parse_args(argv)
    try:
        if args.dir:
            Path(args.dir).mkdir(parents=True, exist_ok=True)
            anyio.run(run_demo, Path(args.dir))
        else:
            with tempfile.TemporaryDirectory(prefix="memorywire-demo-") as d:
                anyio.run(run_demo, Path(d))
    except DemoFailure as exc:
        print(f"\nDEMO FAILED: expected {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

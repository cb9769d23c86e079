"""``benchmarks/recall_latency.py`` on the tiny LoCoMo / LongMemEval files of the retrieval
benchmark tests: every variant is timed on every question, the baseline is the store without
context and feedback, and ``--hits`` records what each variant returned (the before/after
ranking comparison relies on it). Timings are printed, never asserted."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memorywire.embed.hashing import HashingEmbedder

from .test_retrieval_bench import _lme_file, _load, _locomo_file

LAT = _load("recall_latency")


@pytest.mark.anyio
async def test_run_times_every_variant_on_both_benchmarks(tmp_path: Path) -> None:
    result = await LAT.run(_locomo_file(tmp_path), _lme_file(tmp_path), stride=1, limit=10,
                           repeat=2, embedder=HashingEmbedder(64), cache_root=tmp_path / "c")
    locomo, lme = result["results"]["locomo"], result["results"]["longmemeval_s"]
    assert locomo["questions"] == 4 and locomo["k"] == [10]  # adversarial one included
    assert lme["questions"] == 2  # abstention and assistant-only evidence left out
    assert lme["k"] == sorted({len(q) for q in lme["hits"]["baseline"]})  # k = the haystack
    for res in (locomo, lme):
        assert set(res["variants"]) == set(LAT.VARIANTS)
        assert res["variants"]["baseline"]["ratio_p50"] == 1.0
        assert res["variants"]["baseline"]["write_ratio"] == 1.0
        assert all(v["write_turns_per_s"] > 0 for v in res["variants"].values())
        # the same turns in every variant: only the context keys and feedback differ
        ids = {name: [sorted(h[0] for h in q) for q in hits]
               for name, hits in res["hits"].items()}
        assert ids["baseline"] == ids["context"] == ids["defaults"]
    with_context = [h[3] for q in lme["hits"]["defaults"] for h in q if "context" in h[3]]
    assert with_context and all(isinstance(m["context"], str) for m in with_context)
    assert not any("context" in h[3] for q in lme["hits"]["baseline"] for h in q)


def test_main_writes_the_result_and_the_hits(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(LAT, "default_embedder", lambda: HashingEmbedder(64))
    monkeypatch.setattr(LAT, "default_cache", lambda path: tmp_path / "cache" / path.name)
    out, hits = tmp_path / "r.json", tmp_path / "hits.json"
    assert LAT.main(["--locomo", str(_locomo_file(tmp_path)), "--repeat", "1", "--json",
                     "--out", str(out), "--hits", str(hits)]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert json.loads(out.read_text()) == printed
    assert "hits" not in printed["results"]["locomo"]
    assert set(json.loads(hits.read_text())["locomo"]) == set(LAT.VARIANTS)
    assert "x baseline" in LAT.table(printed)
    with pytest.raises(SystemExit):
        LAT.main(["--repeat", "1"])  # neither dataset named

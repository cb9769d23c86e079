"""Every example in docs/integrations.md runs as written (offline) and passes its asserts."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "integrations.md"
BLOCKS = re.findall(r"## (.+?)\n.*?```python\n(.*?)```", DOC.read_text("utf-8"), flags=re.S)
NEEDS = {
    "LangChain": ("langchain_core", "langchain"),
    "LangGraph": ("langgraph", "langgraph"),
    "Pydantic AI": ("pydantic_ai", "pydantic-ai"),
    "OpenAI Agents SDK": ("agents", "openai-agents"),
    "LlamaIndex": ("llama_index.core", "llamaindex"),
}


def test_every_framework_has_an_example() -> None:
    assert [title for title, _ in BLOCKS] == list(NEEDS)


@pytest.mark.parametrize(("title", "code"), BLOCKS, ids=[t for t, _ in BLOCKS])
def test_example_runs(title: str, code: str, tmp_path: Path) -> None:
    module, extra = NEEDS[title]
    if importlib.util.find_spec(module.split(".")[0]) is None:
        pytest.skip(f"needs the memorywire[{extra}] extra")
    done = subprocess.run(
        [sys.executable, "-W", "error::FutureWarning", "-c", code],  # the URL form is current
        cwd=tmp_path, capture_output=True, text=True, timeout=180,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip(), "the example printed nothing"
    assert (tmp_path / "agent.db").exists()

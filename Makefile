# Developer entry points. Everything runs from the project venv in .venv/.
PYTHON ?= python3
VENV := .venv
BIN := $(CURDIR)/$(VENV)/bin
STAMP := $(VENV)/.installed
DEMO := examples/demo
# Paths that exist; ruff refuses a missing one (bench/ arrives later).
LINT_PATHS := $(wildcard gsd tests bench)

.PHONY: venv test lint demo bench clean

venv: $(STAMP)

# Reinstall only when pyproject.toml changes; never upgrades pip itself.
$(STAMP): pyproject.toml
	test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --config-settings editable_mode=compat -e '.[dev]'
	$(VENV)/bin/python -m compileall -q gsd
	touch $@

test: venv
	$(BIN)/python -m pytest

lint: venv
	$(BIN)/ruff check $(LINT_PATHS)
	$(BIN)/mypy

demo: venv
	@echo '==> gsd validate  (in $(DEMO))'
	cd $(DEMO) && $(BIN)/gsd validate
	@echo '==> gsd show 1  (in $(DEMO))'
	cd $(DEMO) && $(BIN)/gsd show 1
	@echo '==> gsd waves 1  (in $(DEMO))'
	cd $(DEMO) && $(BIN)/gsd waves 1
	@echo '==> gsd agents list  (in $(DEMO))'
	cd $(DEMO) && $(BIN)/gsd agents list
	@echo '==> gsd execute-phase 1 --dry-run  (in $(DEMO))'
	cd $(DEMO) && $(BIN)/gsd execute-phase 1 --dry-run

bench: venv
	$(BIN)/python bench/run.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache build dist *.egg-info
	find . -name __pycache__ -type d -prune -exec rm -rf {} +

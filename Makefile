# Every target sets itself up on a fresh machine: it creates .venv and installs what it needs.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint format bench docs clean

$(STAMP): pyproject.toml constraints.txt
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "agentledger needs Python 3.11 or newer"'
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[test,lint]'
	@touch $(STAMP)

demo: $(STAMP)
	rm -rf agentledger-demo
	$(BIN)/agentledger demo agentledger-demo
	@echo "(agentledger is installed in $(VENV): run 'source $(BIN)/activate' to use it directly)"

test: $(STAMP)
	$(BIN)/python -m pytest

lint: $(STAMP)
	$(BIN)/ruff check src tests bench docs
	$(BIN)/ruff format --check src tests bench docs
	$(BIN)/mypy
	$(BIN)/lint-imports
	$(BIN)/python tests/module_sizes.py

format: $(STAMP)
	$(BIN)/ruff format src tests bench docs
	$(BIN)/ruff check --fix src tests bench docs

bench: $(STAMP)
	$(BIN)/python bench/run.py
	$(BIN)/python bench/gate.py
	$(BIN)/python bench/judge.py
	$(BIN)/python bench/trajectory.py
	$(BIN)/python bench/reports.py
	$(BIN)/python bench/agreement.py
	$(BIN)/python bench/guard.py
	$(BIN)/python bench/traces.py
	$(BIN)/python bench/collect.py
	$(BIN)/python bench/label.py
	$(BIN)/python bench/viewer.py
	$(BIN)/python bench/scale.py
	$(BIN)/python bench/labs.py
	$(BIN)/python bench/outcomes.py

docs: $(STAMP)
	$(BIN)/python docs/generate.py

clean:
	rm -rf $(VENV) agentledger-demo bench/.work .pytest_cache .mypy_cache .ruff_cache

# Every target sets itself up on a fresh machine: it creates .venv and installs what it needs.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint format bench docs clean scan

# Strict JSON's one-pass check in C (agentledger.records._strict_scan), built into the source
# tree that the editable install uses; without a C compiler the check runs in Python instead.
SCAN_SRC := src/agentledger/records/_strict_scan.c
SCAN_LIB := src/agentledger/records/_strict_scan.so
CC ?= cc

$(STAMP): pyproject.toml constraints.txt
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "agentledger needs Python 3.11 or newer"'
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[test,lint]'
	@$(MAKE) --no-print-directory scan
	@touch $(STAMP)

scan: $(SCAN_LIB)

$(SCAN_LIB): $(SCAN_SRC)
	$(CC) -O2 -Wall -shared -fPIC \
		-I"$$($(BIN)/python -c 'import sysconfig; print(sysconfig.get_paths()["include"])')" \
		$(SCAN_SRC) -o $@ || echo "no C build of $(SCAN_SRC): strict JSON is checked in Python"

demo: $(STAMP) scan
	rm -rf agentledger-demo agentledger-demo-labs
	$(BIN)/agentledger demo agentledger-demo
	$(BIN)/agentledger demo --labs agentledger-demo-labs
	@echo "(agentledger is installed in $(VENV): run 'source $(BIN)/activate' to use it directly)"

test: $(STAMP) scan
	$(BIN)/python -m pytest

lint: $(STAMP)
	$(BIN)/ruff check src tests bench docs
	$(BIN)/ruff format --check src tests bench docs
	$(BIN)/mypy
	$(BIN)/lint-imports

format: $(STAMP)
	$(BIN)/ruff format src tests bench docs
	$(BIN)/ruff check --fix src tests bench docs

bench: $(STAMP) scan
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
	rm -rf $(VENV) $(SCAN_LIB) agentledger-demo agentledger-demo-labs bench/.work .pytest_cache .mypy_cache .ruff_cache

# Every target sets itself up on a fresh machine: it creates .venv and installs what it needs.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint format bench docs clean scan

# Strict JSON's one-pass check in C (agentledger.records._strict_scan), built into the source
# tree that the editable install uses, named for the interpreter it was built for (another
# Python ignores it). Without a C compiler or Python's headers the check runs in Python instead:
# the build says so in one line and nothing fails.
SCAN_SRC := src/agentledger/records/_strict_scan.c
SCAN_PY := $(if $(wildcard $(BIN)/python),$(BIN)/python,$(PYTHON))
SCAN_LIB := src/agentledger/records/_strict_scan$(shell $(SCAN_PY) -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX") or ".so")')
CC ?= cc

$(STAMP): pyproject.toml constraints.txt
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "agentledger needs Python 3.11 or newer"'
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[test,lint]'
	@$(MAKE) --no-print-directory scan
	@touch $(STAMP)

LANDLOCK_SRC := src/agentledger/runner/shell_gate/_landlock_exec.c
LANDLOCK_BIN := src/agentledger/runner/shell_gate/_landlock_exec

scan: $(SCAN_LIB) $(LANDLOCK_BIN)

# The sandbox's Landlock step in C (runner/shell_gate/landlock_exec.py says what it does):
# without it the sandbox starts the same step in Python, a few tens of milliseconds a command.
$(LANDLOCK_BIN): $(LANDLOCK_SRC)
	@if command -v $(firstword $(CC)) >/dev/null 2>&1; then \
		echo "$(CC) -O2 -Wall $(LANDLOCK_SRC) -o $@"; \
		$(CC) -O2 -Wall $(LANDLOCK_SRC) -o $@ || \
			echo "$(LANDLOCK_SRC) did not build: the sandbox starts its Landlock step in Python"; \
	else \
		echo "no C compiler ($(CC)): the sandbox starts its Landlock step in Python"; \
	fi

$(SCAN_LIB): $(SCAN_SRC)
	@include="$$($(SCAN_PY) -c 'import sysconfig; print(sysconfig.get_paths()["include"])')"; \
	if command -v $(firstword $(CC)) >/dev/null 2>&1 && test -f "$$include/Python.h"; then \
		echo "$(CC) -O2 -Wall -shared -fPIC $(SCAN_SRC) -o $@"; \
		$(CC) -O2 -Wall -shared -fPIC -I"$$include" $(SCAN_SRC) -o $@ || \
			echo "$(SCAN_SRC) did not build: strict JSON is checked in Python"; \
	else \
		echo "no C compiler ($(CC)) or no Python.h: strict JSON is checked in Python"; \
	fi

demo: $(STAMP) scan
	rm -rf agentledger-demo agentledger-demo-labs
	$(BIN)/agentledger demo agentledger-demo
	$(BIN)/agentledger demo --labs agentledger-demo-labs
	@echo "(agentledger is installed in $(VENV): run 'source $(BIN)/activate' to use it directly;"
	@echo " 'export AGENTLEDGER_DIR=agentledger-demo' makes the docs' commands read the demo's ledger)"

# Two processes (pytest-xdist): the suite is mostly CPU-bound and CI machines have two cores.
# TEST_WORKERS=0 runs it in this process (for pdb and -x); each worker starts its own test servers.
TEST_WORKERS ?= 2
test: $(STAMP) scan
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --durations=20

lint: $(STAMP)
	$(BIN)/ruff check src tests bench docs
	$(BIN)/ruff format --check src tests bench docs
	$(BIN)/mypy
	$(BIN)/lint-imports
	$(BIN)/python tests/module_sizes.py

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
	$(BIN)/python bench/startup.py
	$(BIN)/python bench/viewer.py
	$(BIN)/python bench/scale.py
	$(BIN)/python bench/labs.py
	$(BIN)/python bench/outcomes.py

docs: $(STAMP)
	$(BIN)/python docs/generate.py

clean:
	rm -rf $(VENV) src/agentledger/records/_strict_scan*.so $(LANDLOCK_BIN) agentledger-demo agentledger-demo-labs bench/.work .pytest_cache .mypy_cache .ruff_cache

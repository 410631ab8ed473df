# gridbots: `make demo` shows the project working, `make test` checks it. Both set up .venv first.
PYTHON ?= $(shell command -v python3.11 2>/dev/null || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

# no telemetry from any tool, in tests or demos
export DO_NOT_TRACK := 1
export MLFLOW_DISABLE_TELEMETRY := 1
export DVC_NO_ANALYTICS := 1
export GX_ANALYTICS_ENABLED := false
export PYTHONDONTWRITEBYTECODE :=

.PHONY: install test test-fast demo ui lint format bench clean screenshots

install: $(STAMP)

$(STAMP): pyproject.toml constraints.txt
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "gridbots needs Python 3.11 or newer")'
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[dev,peers,dask]'
	@touch $@

# ruff runs without its cache here: a cached verdict once outlived a moved package and hid
# unsorted imports that a fresh clone reports
test: $(STAMP)
	$(BIN)/ruff check --no-cache .
	$(BIN)/python -m pytest

# the edit-test loop: every test but those marked slow (whole chains, the cluster, the browser,
# killed-and-resumed runs, hostile bot processes); `make test` stays the whole suite
test-fast: $(STAMP)
	$(BIN)/ruff check --no-cache .
	$(BIN)/python -m pytest -m "not slow"

# set-up, then `dvc repro` of the whole chain (one Prefect server for every stage), then
# where to look: tournament table, production versions, the UIs, reports/pipeline/README.md
demo: $(STAMP)
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/gridbots repro

# the Prefect UI and the MLflow UI on 127.0.0.1 (addresses printed; Ctrl-C stops both)
ui: $(STAMP)
	$(BIN)/gridbots ui

lint: $(STAMP)
	$(BIN)/ruff check --no-cache .
	$(BIN)/ruff format --check .

format: $(STAMP)
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

bench: $(STAMP)
	$(BIN)/python benchmarks/engine_speed.py

# the README's screenshots, taken by the browser tests (a tiny model trained and registered; MLflow's training-runs view)
screenshots: $(STAMP)
	GRIDBOTS_SCREENSHOTS=$(CURDIR)/docs/screenshots $(BIN)/python -m pytest -q -p no:cacheprovider tests/test_web_browser.py tests/test_mlflow_ui_browser.py

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .hypothesis
	find . -name __pycache__ -prune -exec rm -rf {} +

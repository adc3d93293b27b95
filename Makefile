# citeline: two commands on a fresh machine (README "Quick start").
#   make demo   set up .venv and run the embedded default end to end
#   make test   set up .venv with the test extras, lint, type-check and run the suite
#   make test-fast  lint, then the suite without Phoenix, Chromium, Dask clusters or slow tests
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
TYPES  := build/typecheck

.PHONY: demo test test-fast lint typecheck bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

$(VENV)/.base: pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e .
	touch $@

$(VENV)/.test: pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e '.[test]'
	touch $(VENV)/.base $@

demo: $(VENV)/.base
	$(BIN)/citeline demo

lint: $(VENV)/.test
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# mypy cannot follow setuptools' editable-install finder, so it reads the
# package through a symlink tree laid out as it is installed (citeline.*);
# the tests (and the bench helpers they import) are read from here, as strictly.
typecheck: $(VENV)/.test
	rm -rf $(TYPES) && mkdir -p $(TYPES)/citeline
	for d in instrumentation analyzer examples queries; do ln -s ../../../$$d $(TYPES)/citeline/$$d; done
	MYPYPATH=$(TYPES) $(BIN)/mypy -p citeline.instrumentation -p citeline.analyzer -p citeline.examples -p tests

# two pytest-xdist workers, a test file to each (module fixtures such as a Phoenix server start once per
# file): the suite is mostly one process waiting on one core, so two workers halve its time on 2 cores
test: lint typecheck
	$(BIN)/pytest -n 2 --dist loadfile

# the inner loop: no Phoenix, no browser, no Dask cluster, nothing marked slow (pyproject.toml
# markers), on two pytest-xdist workers; `make test` (CI) still runs every test
FAST := not integration and not browser and not cluster and not slow
test-fast: lint
	$(BIN)/pytest -m "$(FAST)" -n 2

# the figures in docs/benchmarks.md (about 5 minutes on 2 cores; 1.3 GB of synthetic traces in a temp dir)
bench: $(VENV)/.base
	$(BIN)/python bench/instrumentation.py
	$(BIN)/python bench/analyzer.py --n 100000 --baseline-n 20000

clean:
	rm -rf $(VENV) build *.egg-info citeline.duckdb citeline-demo-traces

# The two commands of the README: `make bench` (set up + run the default campaign) and
# `make test` (set up + run the tests). Both create .venv on first use.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: bench test lint core-bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

bench: $(STAMP)
	$(PY) run_bench.py simulate --campaign campaigns/simulate.yaml

test: $(STAMP)
	$(PY) -m ruff check .
	$(PY) -m pytest -q

core-bench: $(STAMP)
	$(PY) run_bench.py bench core

clean:
	rm -rf $(VENV)

# The two commands of the README: `make bench` (set up + run the default live campaign) and
# `make test` (set up + run the tests). Both create .venv on first use.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: bench test test-fast simulate notebook core-bench live-bench hostile-bench system-deps clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

bench: $(STAMP)
	$(PY) run_bench.py run campaigns/default.yaml

simulate: $(STAMP)
	$(PY) run_bench.py simulate --campaign campaigns/simulate.yaml

# The analysis notebook in JupyterLab (a dev extra, installed with the rest): the newest results
# folder, or RATELIMIT_RESULTS=DIR (docs/analysis.md, "The notebook"). Under CI=true: installed, never launched.
notebook: $(STAMP)
	@if [ -n "$$CI" ]; then echo "CI: JupyterLab installed, not launched (tests/analysis/test_notebook.py runs the notebook)"; \
	else $(VENV)/bin/jupyter lab analysis/notebooks/compare.ipynb; fi

test: $(STAMP) system-deps
	$(PY) -m ruff check .
	$(PY) -m pytest -q -n 4 --dist loadfile --no-loadscope-reorder --durations=15  # four files at a time, the long ones first (tests/lanes.py); on 2 cores the suite is CPU-bound (1,166-1,303 s of CPU, each worker 238-351 s; no file over 60 s): 637-732 s on fresh clones on 2026-12-07 by the hour, 495-543 s on 2026-12-04's faster day, more workers slower (783 s with six)

# The fast lane: every test that starts no process and is not slow (`-m "not process and not slow"`,
# tests/lanes.py), two files at a time, for the edit-test loop; `make test` (and CI) runs them all.
# Measured 2026-12-04 on this 2-core machine: 976 tests in 116 s (2 min 8 s with ruff) with one other
# job's tests beside it; 965 in 241 s at load average 7; `-m "not process"` alone took 425 s there.
test-fast: $(STAMP)
	$(PY) -m ruff check .
	$(PY) -m pytest -q -m "not process and not slow" -n 2 --dist loadfile --durations=10

# What some tests drive besides Python: Redis (store tests), Chromium (report rendering), NGINX and
# HAProxy (the peer targets); and wrk, which the live benchmark runs beside the suite's generator.
# Installed from the system's packages when missing and we are root; otherwise those tests say
# what is missing (and, under CI=true, fail rather than skip).
system-deps:
	@for pair in redis-server:redis-server chromium:chromium nginx:nginx haproxy:haproxy wrk:wrk; do \
	  bin=$${pair%%:*}; pkg=$${pair##*:}; \
	  command -v $$bin >/dev/null 2>&1 && continue; \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing $$pkg"; (apt-get update -qq && apt-get install -y -qq $$pkg >/dev/null) || echo "could not install $$pkg"; \
	  else echo "$$bin not found: install $$pkg for the tests that need it"; fi; \
	done

core-bench: $(STAMP)
	$(PY) run_bench.py bench core

live-bench: $(STAMP) system-deps
	$(PY) run_bench.py bench live

hostile-bench: $(STAMP)
	$(PY) run_bench.py bench hostile

clean:
	rm -rf $(VENV)

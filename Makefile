# make demo: grade the bundled examples.  make test: run the test suite.  Both set up .venv first.
# make docs: build the documentation site strictly into site/ (.venv/bin/mkdocs serve serves it while you edit).
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
export PREFECT_SERVER_ANALYTICS_ENABLED ?= false
# Material for MkDocs prints a banner about MkDocs 2.0 on every build otherwise.
export NO_MKDOCS_2_WARNING ?= 1

.PHONY: install demo test lint docs bench clean

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	touch $@

install: $(VENV)/.installed

demo: install
	$(PY) scripts/demo.py

# Test files run in parallel on every core (pytest-xdist; each worker has its own Prefect test server);
# the slowest tests are listed at the end. TEST_WORKERS=0 runs them in this process.
TEST_WORKERS ?= auto

# Tests marked timing (speed-up and CPU-share figures) run afterwards, alone: a second worker would be their noise.
test: install
	$(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadfile --durations=25 -m "not timing"
	$(PY) -m pytest -q -m timing --durations=5

# A broken link or anchor, a page left out of the navigation or a reason code without an entry fails it.
docs: install
	$(VENV)/bin/mkdocs build --strict --quiet

lint: install docs
	$(VENV)/bin/ruff check src tests bench scripts
	$(VENV)/bin/ruff format --check src tests bench scripts
	$(VENV)/bin/mypy

bench: install
	$(PY) bench/overhead.py

clean:
	rm -rf $(VENV) .gradeflow site

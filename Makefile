# Two entry points for users: `make test` and `make figs`. Each creates .venv when missing.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: test figs venv bench lint clean docs test-record

# the real routing traces: $PAGING_TRACES, else ../shared/traces when it exists
TRACES ?= $(or $(PAGING_TRACES),$(shell test -d ../shared/traces && cd ../shared/traces && pwd))

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test,sweep]'
	touch $(STAMP)

venv: $(STAMP)

test: $(STAMP)
	PAGING_TRACES=$(TRACES) $(PY) -m pytest -q -n auto $(PYTEST_ARGS)

# `paging record` needs torch + transformers (the `record` extra): installed here, not by `make
# test` (whose run skips these tests); CPU build of torch first, a plain `torch` is the CUDA one
TORCH ?= torch==2.13.0
test-record: $(STAMP)
	$(PY) -m pip install --quiet '$(TORCH)'
	$(PY) -m pip install --quiet -e '.[test,sweep,record]'
	PAGING_TRACES=$(TRACES) $(PY) -m pytest -q -p no:xdist tests/unit/test_record.py

figs: $(STAMP)
	PAGING_TRACES=$(TRACES) $(VENV)/bin/paging figs

bench: $(STAMP)
	$(PY) -m pip install --quiet -e '.[test,sweep,bench]'
	$(PY) benchmarks/bench_vs_libcachesim.py

docs: $(STAMP)
	$(PY) -m pip install --quiet -e '.[test,sweep,docs]'
	$(PY) -m sphinx -W --keep-going -q -b html docs/site docs/site/_build/html

lint: $(STAMP)
	$(VENV)/bin/ruff check paging adversaries proofs experiments tests benchmarks

clean:
	rm -rf $(VENV) paper_figs docs/site/_build docs/site/cli.md docs/site/policies.md docs/site/theory.md docs/site/figures.md

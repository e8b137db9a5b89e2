# Astral-P4 — the two commands a newcomer needs are `make run` and `make test`.
# Everything runs from a local virtualenv (.venv) built from requirements.txt.

SHELL := /bin/bash
# Debian's python3 so that Mininet (a Debian package) is importable from the venv later.
PYTHON_SYS := $(shell if [ -x /usr/bin/python3 ]; then echo /usr/bin/python3; else command -v python3; fi)
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-$(shell sha1sum requirements.txt | cut -c1-12)
PYTEST_ARGS ?=

.PHONY: venv test test-p4sim bench clean help

help:
	@echo "make venv   - create .venv with the pinned requirements (idempotent)"
	@echo "make test   - run every test (what CI runs)"
	@echo "make bench  - run the benchmarks, write build/bench.json"

venv: $(STAMP)

$(STAMP): requirements.txt
	@test -x $(PY) || $(PYTHON_SYS) -m venv $(VENV)
	$(PY) -m pip install --disable-pip-version-check -q -r requirements.txt
	@rm -f $(VENV)/.installed-*
	@touch $@

test: venv
	$(PY) -m pytest -q $(PYTEST_ARGS) tests

test-p4sim: venv
	$(PY) -m pytest -q $(PYTEST_ARGS) tests/p4sim

bench: venv
	@mkdir -p build
	$(PY) -m bench

clean:
	rm -rf build .pytest_cache

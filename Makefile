# Astral-P4 — the two commands a newcomer needs are `make run` and `make test`.
# Everything runs from a local virtualenv (.venv) built from requirements.txt.

SHELL := /bin/bash
# Debian's python3 so that Mininet (a Debian package) is importable from the venv later.
PYTHON_SYS := $(shell if [ -x /usr/bin/python3 ]; then echo /usr/bin/python3; else command -v python3; fi)
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-$(shell sha1sum requirements.txt | cut -c1-12)
PYTEST_ARGS ?=

.PHONY: venv test test-p4sim bench ptf clean help run stop shell

help:
	@echo "make venv   - create .venv with the pinned requirements (idempotent)"
	@echo "make run    - the testbed (root): fabric up in Mininet, programmed, ping story, scenario; CLI=0 TARGET=p4sim|bmv2 SCENARIO=default|link-failure|alltoall"
	@echo "make shell SW=b0r0l0 - p4runtime-shell on one switch of the running testbed"
	@echo "make stop   - tear down only what the testbed recorded (build/testbed-state.json)"
	@echo "make test   - run every test (what CI runs)"
	@echo "make bench  - run the benchmarks, write build/bench.json"
	@echo "make ptf    - PTF suite of the fabric (root): TARGET=p4sim|bmv2 P4C=... SIMPLE_SWITCH_GRPC=..."

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

# PTF suite of p4src/fabric.p4 (needs root: veth pairs). `make test` runs it too, through
# tests/ptf/test_ptf_suite.py (skipped without root).
TARGET ?= p4sim
P4C ?= p4c-bm2-ss
SIMPLE_SWITCH_GRPC ?= simple_switch_grpc

ptf: venv
	$(PY) tests/ptf/run_ptf.py --target $(TARGET) --p4c $(P4C) --simple-switch-grpc $(SIMPLE_SWITCH_GRPC)

# The testbed (topo/testbed.py, needs root). TARGET given on the command line or in the
# environment wins; otherwise BMv2 when simple_switch_grpc is on PATH, else p4sim.
RUN_TARGET = $(if $(filter command line environment,$(origin TARGET)),$(TARGET),auto)
CLI ?= 1
# default | link-failure | alltoall (topo/scenario.py); reports in runs/<timestamp>/
SCENARIO ?= default

run: venv
	@$(PY) -m topo.testbed deps
	$(PY) -m topo.testbed up --target $(RUN_TARGET) --scenario $(SCENARIO) $(if $(filter 0,$(CLI)),--cli no,)

SW ?=
shell: venv
	@$(PY) -m topo.shell $(SW)

stop:
	@if [ -x $(PY) ]; then $(PY) -m topo.testbed down; else $(PYTHON_SYS) -m topo.testbed down; fi

bench: venv
	@mkdir -p build
	$(PY) -m bench

clean:
	rm -rf build .pytest_cache

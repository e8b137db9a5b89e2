# Astral-P4 — the two commands a newcomer needs are `make run` and `make test`.
# Everything runs from a local virtualenv (.venv) built from requirements.txt; p4runtime-shell,
# which pins protobuf 3.20, has an environment of its own (.venv-shell, requirements-shell.txt).

SHELL := /bin/bash
# Debian's python3 so that Mininet (a Debian package) is importable from the venv later.
PYTHON_SYS := $(shell if [ -x /usr/bin/python3 ]; then echo /usr/bin/python3; else command -v python3; fi)
VENV := .venv
PY := $(VENV)/bin/python
# What `make venv` installs: the pinned requirements, then this repository (pyproject.toml:
# p4sim and its console scripts, editable), the P4Runtime bindings p4.v1 / p4.config.v1
# (p4runtime_proto) and PI's p4.tmp.p4config_pb2 (p4sim/p4runtime/proto).
P4RT_PY := p4runtime_proto/p4/v1/p4runtime_pb2.py p4runtime_proto/p4/v1/p4runtime_pb2_grpc.py \
  p4runtime_proto/p4/v1/p4data_pb2.py p4runtime_proto/p4/config/v1/p4info_pb2.py \
  p4runtime_proto/p4/config/v1/p4types_pb2.py
VENV_INPUTS := requirements.txt pyproject.toml p4runtime_proto/pyproject.toml $(P4RT_PY) \
  p4sim/p4runtime/proto/pyproject.toml p4sim/p4runtime/proto/p4/tmp/p4config_pb2.py
STAMP := $(VENV)/.installed-$(shell cat $(VENV_INPUTS) | sha1sum | cut -c1-12)
# p4runtime-shell's own environment: `make shell`, lab 04's hand-reading step and the
# p4runtime-shell compatibility tests run it there, talking to the switch over gRPC.
SHELL_VENV := .venv-shell
SHELL_PY := $(SHELL_VENV)/bin/python
SHELL_STAMP := $(SHELL_VENV)/.installed-$(shell cat requirements-shell.txt | sha1sum | cut -c1-12)
PYTEST_ARGS ?=

.PHONY: venv venv-shell test test-p4sim bench ptf clean help run stop shell proto sim fuzz

help:
	@echo "make venv   - create .venv with the pinned requirements (idempotent)"
	@echo "make venv-shell - create .venv-shell with p4runtime-shell (made on first use by make shell/test)"
	@echo "make run    - the testbed (root): fabric up in Mininet, programmed, ping story, scenario; CLI=0 TARGET=p4sim|bmv2 SCENARIO=default(the GOR story)|link-failure|dead-link|alltoall|incast|faults|fornax|none MONITOR_PORT=N (faults' web view)"
	@echo "make shell SW=b0r0l0 - p4runtime-shell on one switch of the running testbed"
	@echo "make stop   - tear down only what the testbed recorded (build/testbed-state.json)"
	@echo "make test   - run every test (what CI runs)"
	@echo "make bench  - run the benchmarks, write build/bench.json; BENCH=monitor TARGET=bmv2 -> build/bench-bmv2.json"
	@echo "make fuzz   - fuzzing at full size (root for the frames): 10^6 frames, 10^5 P4Runtime messages, 2x10^4 agent calls; SEED=N"
	@echo "make sim    - pod-scale simulator study: random ECMP vs TCCL vs TCCL+GOR on 1K/8K/64K GPUs (runs/sim-<time>/)"
	@echo "make ptf    - PTF suite of the fabric (root, TLS by default): TARGET=p4sim|bmv2 P4C=... SIMPLE_SWITCH_GRPC=... INSECURE=1"
	@echo "make proto  - regenerate astral_proto/agent_pb2*.py, the P4Runtime bindings (p4runtime_proto) and p4sim's p4.tmp.p4config_pb2"

venv: $(STAMP)

# A .venv made before protobuf 7 holds p4runtime-shell and PyPI's p4runtime (protoc 3.x
# modules that upb refuses, in the same p4/ files as p4runtime_proto): they are removed first.
$(STAMP): $(VENV_INPUTS)
	@test -x $(PY) || $(PYTHON_SYS) -m venv $(VENV)
	@if $(PY) -m pip show -q p4runtime-shell p4runtime >/dev/null 2>&1; then \
	  $(PY) -m pip uninstall --disable-pip-version-check -q -y p4runtime-shell p4runtime ipython jedi; fi
	$(PY) -m pip install --disable-pip-version-check -q -r requirements.txt
	$(PY) -m pip install --disable-pip-version-check -q --no-deps --force-reinstall ./p4runtime_proto ./p4sim/p4runtime/proto
	$(PY) -m pip install --disable-pip-version-check -q --no-deps -e .
	@rm -f $(VENV)/.installed-*
	@touch $@

venv-shell: $(SHELL_STAMP)

$(SHELL_STAMP): requirements-shell.txt
	@test -x $(SHELL_PY) || $(PYTHON_SYS) -m venv $(SHELL_VENV)
	$(SHELL_PY) -m pip install --disable-pip-version-check -q -r requirements-shell.txt
	@rm -f $(SHELL_VENV)/.installed-*
	@touch $@

test: venv venv-shell
	$(PY) -m pytest -q $(PYTEST_ARGS) tests

test-p4sim: venv
	$(PY) -m pytest -q $(PYTEST_ARGS) tests/p4sim

# PTF suite of p4src/fabric.p4 (needs root: veth pairs). `make test` runs it too, through
# tests/ptf/test_ptf_suite.py (skipped without root).
TARGET ?= p4sim
P4C ?= p4c-bm2-ss
SIMPLE_SWITCH_GRPC ?= simple_switch_grpc

ptf: venv
	$(PY) tests/ptf/run_ptf.py --target $(TARGET) --p4c $(P4C) --simple-switch-grpc $(SIMPLE_SWITCH_GRPC) $(if $(filter-out 0,$(INSECURE)),--insecure)

# The testbed (testbed/, needs root) and a scenario (scenarios/). TARGET given on the command
# line or in the environment wins; otherwise BMv2 when simple_switch_grpc is on PATH, else p4sim.
RUN_TARGET = $(if $(filter command line environment,$(origin TARGET)),$(TARGET),auto)
CLI ?= 1
# default (the GOR story, scenarios/story.py; gor is another name) | link-failure | dead-link |
# alltoall | incast | faults | none (the fabric up, no scenario): `python -m scenarios --list`
# (scenarios/registry.py); reports in runs/<timestamp>/
SCENARIO ?= default
# PCAP=1: the switches capture every frame of every port to pcaps/ (off by default in a
# scenario: testbed/README.md, "Captures"); PCAP=b0r0l0,s0: those switches only
PCAP ?=

run: venv
	@$(PY) -m testbed deps
	$(PY) -m scenarios up --target $(RUN_TARGET) --scenario '$(SCENARIO)' $(if $(filter 0,$(CLI)),--cli no,) $(if $(SPEC),--spec '$(SPEC)',) $(if $(MONITOR_PORT),--monitor-port '$(MONITOR_PORT)',) $(if $(filter 1,$(PCAP)),--pcap,$(if $(filter-out 0,$(PCAP)),--pcap-switches '$(PCAP)',))

SW ?=
shell: venv venv-shell
	@$(PY) -m testbed.shell $(SW)

stop:
	@if [ -x $(PY) ]; then $(PY) -m testbed down; else $(PYTHON_SYS) -m testbed down; fi

# BENCH=GROUP[ GROUP.NAME ...] limits the run; TARGET=bmv2 (given on the command line) runs
# the benchmarks that measure BMv2 (simple_switch_grpc and p4c-bm2-ss on PATH) into
# build/bench-bmv2.json: `sudo make bench BENCH=monitor TARGET=bmv2`.
BENCH ?=
bench: venv
	@mkdir -p build
	$(PY) -m bench $(BENCH) $(if $(filter command line,$(origin TARGET)),--target $(TARGET))

# The pod-scale flow-level simulator (sim/README.md): the default study.
sim: venv
	$(PY) -m sim study

# Fuzzing at scale (fuzz/README.md): 10^6 frames into a live p4sim switch over veths (root),
# 10^5 P4Runtime messages, 2x10^4 agent-protocol calls. SEED=N reproduces a run.
SEED ?= 0
fuzz: venv
	@mkdir -p build
	$(PY) -m fuzz all --size full --seed $(SEED) --out build/fuzz.json

# Generated Python, committed: the agent protocol (astral_proto/agent.proto), the P4Runtime
# bindings p4.v1 / p4.config.v1 (p4runtime_proto/: from the file descriptors of the P4Runtime
# release on PyPI, read by p4runtime_proto/descriptor_set.py without importing its modules)
# and PI's p4.tmp.P4DeviceConfig (p4sim/p4runtime/proto). grpcio-tools 1.85.1 (protoc 35.1)
# runs in a throwaway venv, never in .venv; its output checks the runtime at import:
# protobuf >= 7.35.1 and < 8, grpcio >= 1.85.1 (requirements.txt pins 7.36.2 and 1.85.3).
GRPCIO_TOOLS := 1.85.1
P4RUNTIME_RELEASE := 1.6.0
PROTO_VENV ?= /tmp/astral-protogen-$(GRPCIO_TOOLS)
PROTO_GEN := by `make proto` (grpcio-tools $(GRPCIO_TOOLS), protoc 35.1; needs protobuf >= 7.35.1, < 8 and grpcio >= $(GRPCIO_TOOLS))
PROTO_HEADER := \# Generated from astral_proto/agent.proto $(PROTO_GEN).
P4RT_DIR := p4runtime_proto
P4RT_HEADER := \# Generated from the file descriptors of the P4Runtime $(P4RUNTIME_RELEASE) release (p4runtime_proto/descriptor_set.py) $(PROTO_GEN).
# PI's p4.tmp.P4DeviceConfig from our own .proto of the same package and message (p4sim
# imports it; `make venv` installs it as p4.tmp.p4config_pb2 for BMv2 controllers).
P4TMP_DIR := p4sim/p4runtime/proto
P4TMP_HEADER := \# Generated from p4sim/p4runtime/proto/p4/tmp/p4config.proto (PI message p4.tmp.P4DeviceConfig) $(PROTO_GEN).
PROTOC := $(PROTO_VENV)/bin/python -m grpc_tools.protoc

proto:
	@test -f $(PROTO_VENV)/.ready || { $(PYTHON_SYS) -m venv $(PROTO_VENV) && \
	  $(PROTO_VENV)/bin/pip install -q grpcio-tools==$(GRPCIO_TOOLS) googleapis-common-protos==1.76.0 && \
	  $(PROTO_VENV)/bin/pip install -q --no-deps p4runtime==$(P4RUNTIME_RELEASE) && touch $(PROTO_VENV)/.ready; }
	$(PROTOC) -I. --python_out=. --grpc_python_out=. astral_proto/agent.proto
	@for f in astral_proto/agent_pb2.py astral_proto/agent_pb2_grpc.py; do \
	  { echo '$(PROTO_HEADER)'; cat $$f; } > $$f.tmp && mv $$f.tmp $$f; done
	$(PROTO_VENV)/bin/python $(P4RT_DIR)/descriptor_set.py $(P4RUNTIME_RELEASE) $(PROTO_VENV)/p4runtime.pb
	$(PROTOC) --descriptor_set_in=$(PROTO_VENV)/p4runtime.pb --python_out=$(P4RT_DIR) \
	  p4/v1/p4runtime.proto p4/v1/p4data.proto p4/config/v1/p4info.proto p4/config/v1/p4types.proto
	$(PROTOC) --descriptor_set_in=$(PROTO_VENV)/p4runtime.pb --grpc_python_out=$(P4RT_DIR) p4/v1/p4runtime.proto
	@for f in $(P4RT_PY); do { echo '$(P4RT_HEADER)'; cat $$f; } > $$f.tmp && mv $$f.tmp $$f; done
	$(PROTOC) -I$(P4TMP_DIR) --python_out=$(P4TMP_DIR) $(P4TMP_DIR)/p4/tmp/p4config.proto
	@f=$(P4TMP_DIR)/p4/tmp/p4config_pb2.py; { echo '$(P4TMP_HEADER)'; cat $$f; } > $$f.tmp && mv $$f.tmp $$f

clean:
	rm -rf build .pytest_cache

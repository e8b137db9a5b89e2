# Shared Makefile of every lab. A lab's Makefile is two lines:
#     LAB_DIR := $(dir $(abspath $(lastword $(MAKEFILE_LIST))))
#     include ../common.mk
# Targets: run, check, check-solution, solution, clean. TARGET=p4sim (default) or bmv2.
# Works from the lab folder (`make check`) and from the root (`make -C labs/NN-name check`).
SHELL := /bin/bash
ROOT := $(abspath $(LAB_DIR)/../..)
LAB_NAME := $(notdir $(patsubst %/,%,$(LAB_DIR)))
PY := $(ROOT)/.venv/bin/python
TARGET ?= p4sim
LABKIT = cd $(ROOT) && $(PY) -m labs.labkit

.PHONY: run check check-solution solution clean

$(PY):
	$(MAKE) -C $(ROOT) venv

run: | $(PY)
	$(LABKIT) run $(LAB_DIR) --target $(TARGET)

check: | $(PY)
	$(LABKIT) check $(LAB_DIR) --target $(TARGET)

check-solution: | $(PY)
	$(LABKIT) check $(LAB_DIR) --solution --target $(TARGET)

solution: | $(PY)
	$(LABKIT) run $(LAB_DIR) --solution --target $(TARGET)

clean:
	rm -rf $(ROOT)/build/labs/$(LAB_NAME)

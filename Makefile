# Two commands for a fresh CPU-only machine with Python 3.11:
#   make serve   install the site's tools and serve it at http://127.0.0.1:8000
#   make test    install everything and run the whole verification
.DEFAULT_GOAL := help
SHELL := /bin/bash
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
TORCH ?= torch==2.13.0
# Torch's CPU build. PyPI's Linux wheel of torch is the multi-GB CUDA build, so
# torch comes first, on its own: from a local wheel cache where pip is set up
# with one (no index asked), else from PyTorch's CPU-only index.
TORCH_CPU_INDEX ?= https://download.pytorch.org/whl/cpu
# The installer: uv, itself installed with pip into the venv, resolves and installs the site's
# ~90 packages in about a third of pip's time (CONTRIBUTING.md, "Build speed", has the times).
# `make serve UV=` installs with pip only. uv does not read pip's configuration; a local
# wheel folder pip is set up with (find-links) is passed on to it for torch.
UV ?= 1
INSTALL_INTO = $(if $(UV),$(1)/bin/uv pip install --compile-bytecode --python $(1)/bin/python,$(1)/bin/python -m pip install)
INSTALL = $(call INSTALL_INTO,$(VENV))
LOCAL_WHEELS = $(foreach d,$(shell $(PY) -m pip config get global.find-links 2>/dev/null),--find-links $(d))

.PHONY: help install install-site serve build test test-latest-triton lint notebooks bench-tiny gpu-check gpu-wheels screenshot clean

help:
	@echo "make serve   install and serve the site at http://127.0.0.1:8000"
	@echo "make test    install and run the whole verification (tests, code blocks, site, browser)"
	@echo "make gpu-check   on a CUDA machine: re-verify what changed (FULL=1: everything), recorded in benchmarks/verified/"
	@echo "make notebooks   after editing an example: write notebooks/<story>.ipynb (what Open in Colab opens)"

$(BIN)/python:
	$(PY) -m venv $(VENV)

# Two stages: the site's tools (`make serve`, `make build`: the `site` extra), then the test
# tools on top (`make test`: the `test` extra). A fresh clone's `make serve` installs only the
# first, so the first page comes sooner.
$(VENV)/.installed-site: pyproject.toml | $(BIN)/python
	$(if $(UV),$(BIN)/python -m pip install -q uv,$(BIN)/python -m pip install -q --upgrade pip)
	$(BIN)/python -c "import torch" 2>/dev/null || \
	  $(INSTALL) -q --no-index --no-deps $(LOCAL_WHEELS) "$(TORCH)" 2>/dev/null || \
	  $(INSTALL) -q --no-deps "$(TORCH)" --index-url $(TORCH_CPU_INDEX)
	$(INSTALL) -q -e ".[site]"
	touch $@

$(VENV)/.installed: $(VENV)/.installed-site
	$(INSTALL) -q -e ".[test]"
	touch $@

install-site: $(VENV)/.installed-site
install: $(VENV)/.installed

# --dirty: a page edit re-renders that page only (about 2 s); an edit to an example, a result
# file or a script re-renders every page (scripts/hooks.py). `make build` is the strict check.
serve: install-site
	$(BIN)/mkdocs serve --dirty --no-strict -a 127.0.0.1:8000

build: install-site
	$(BIN)/mkdocs build --strict

lint: install
	$(BIN)/ruff check .

# notebooks/<story>.ipynb, made from examples/ for "Open in Colab" (Colab opens what GitHub holds)
notebooks: install-site
	$(BIN)/python -m scripts.notebooks --write-committed

# The whole verification, in the order a failure is cheapest to read.
# The Gluon story's compile check (sm_90 code built on a CPU) runs in a process of its own: after any
# kernel has run in Triton 3.6's interpreter, a Gluon kernel compiled in the same process, with a cold
# Triton cache, fails in Gluon's frontend ("`_semantic` argument must be provided").
SM90_TEST := tests/test_attention_hopper.py
SM90_PAGE := docs/kernels/attention-hopper.md
test: install
	$(BIN)/ruff check .
	$(BIN)/python -m scripts.results --stale  # result files older than their example (printed, not fatal)
	$(BIN)/pytest -n 2 tests --ignore=tests/browser --ignore=$(SM90_TEST)
	$(BIN)/pytest $(SM90_TEST)
	$(BIN)/python -m scripts.check_exercises
	$(BIN)/pytest -n 2 --codeblocks docs/ --ignore=$(SM90_PAGE)
	$(BIN)/pytest --codeblocks $(SM90_PAGE)
	$(BIN)/mkdocs build --strict
	$(BIN)/pytest tests/browser

# The examples' tests again under the newest Triton release, in a second venv, so the
# site never teaches an API that has since been removed (block pointers went in 3.9).
LATEST := .venv-triton-latest
test-latest-triton:
	$(MAKE) --no-print-directory install VENV=$(LATEST)
	$(call INSTALL_INTO,$(LATEST)) -q --upgrade --no-deps triton
	$(LATEST)/bin/python -c "import triton; print('newest triton:', triton.__version__)"
	$(LATEST)/bin/pytest -n 2 tests --ignore=tests/browser -p no:cacheprovider

# On a CUDA machine, with torch and Triton already installed for its GPU (no venv: the
# venv above holds torch's CPU build): what changed since benchmarks/verified/<gpu>.json, its
# tests, pages' code, self-checks and GPU property tests (scripts/gpu_scope.py), added to the
# record when it passed. FULL=1: the whole suite in random order, the pages' code, every example
# and the GPU property profile, a new record. GPU_CHECK_ARGS="--runs 2": two random orders.
GPU_PY ?= python3
GPU_CHECK_ARGS ?=
FULL ?=
gpu-check:
	$(GPU_PY) -m scripts.gpu_check $(if $(FULL),,--changed) $(GPU_CHECK_ARGS)

# The pure-Python wheels the GPU machine lacks (it has no network): carried in .whl/ (the device
# tool's carry list) and installed by benchmarks/gpu_run.sh. liger-kernel is layer norm's peer.
WHEEL_DIR ?= .whl
GPU_WHEELS := "pytest-codeblocks>=0.17,<0.19" pymdown-extensions==13.1 "pytest-randomly>=3.15" \
	markdown liger-kernel==0.8.5
gpu-wheels:
	python3 -m pip download -q --no-deps -d $(WHEEL_DIR) $(GPU_WHEELS)

# The README's picture of the home page (docs/assets/screenshot.png): the site built, then
# photographed at 1280x800 in Debian's chromium (scripts/screenshot.py). Run it after a change to
# the home page and commit the PNG.
screenshot: install
	$(BIN)/mkdocs build --strict
	$(BIN)/python -m scripts.screenshot

bench-tiny: install
	TRITON_INTERPRET=1 $(BIN)/python -m scripts.bench --tiny --all

clean:
	rm -rf site .cache

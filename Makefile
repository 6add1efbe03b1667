# Two commands do everything (see README.md):
#   make serve   set up, build the site and serve it on http://127.0.0.1:8000
#   make test    set up, build the site and run every test
# Each step below is skipped when its outputs are newer than its inputs.

SHELL := /bin/bash
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PORT   ?= 8000
# Where `make site` writes the site (the Pages workflow publishes site/).
SITE_DIR ?= site
# Which model the site serves: book (the book's own trained model, committed in
# model_export/book_model/), a preset of random weights (tiny, small-random), a local directory
# saved with save_pretrained, or a Hugging Face Hub id (gpt2, distilgpt2, ...).
# Left unset, `make serve` takes gpt2 when the Hugging Face Hub answers or the local
# Hugging Face cache has it, and falls back to book otherwise, saying why; every other
# target (make site and make test among them) takes book.
ifeq ($(origin MODEL),undefined)
  ifneq ($(filter serve,$(MAKECMDGOALS)),)
    MODEL := $(shell $(PYTHON) -m model_export.hub gpt2 book)
  endif
endif
MODEL  ?= book
MODEL_NAME := $(notdir $(patsubst %/,%,$(MODEL)))
ifneq ($(filter $(MODEL),tiny small-random),)
  MODEL_FROM := --preset $(MODEL)
else
  MODEL_FROM := --from $(MODEL)
endif
MODEL_DIR := build/models/$(MODEL_NAME)
export TX_MODEL := $(MODEL_NAME)
export NO_MKDOCS_2_WARNING := 1

VENV_STAMP := $(VENV)/.installed
NPM_STAMP  := node_modules/.installed
VENDOR     := build/vendor/versions.json
MANIFEST   := $(MODEL_DIR)/manifest.json

.PHONY: help serve test test-fast test-durations test-ready lint format site setup assets model browser pyodide-wheels bench-peer-deps clean check-budgets

help:
	@echo "make serve   build everything and serve the site on http://127.0.0.1:$(PORT)"
	@echo "make test    build everything and run every test"
	@echo "make test-fast   the CPython and node tests and one browser smoke test (under 3 minutes)"
	@echo "(also: make lint | format | site | model MODEL=... | assets | setup | bench-peer-deps | check-budgets | clean)"

# The address written into sitemap.xml (mkdocs.yml's site_url): the one `make serve` serves.
serve: export SITE_URL ?= http://127.0.0.1:$(PORT)/
serve: site
	$(PY) -m sitebuild.serve $(SITE_DIR) --port $(PORT)

# The whole suite: the node tests run beside pytest, which shares the tests out over two
# workers (tests/conftest.py says how); durations of the slowest 25 at the end.
TEST_WORKERS ?= 2
PYTEST_PARALLEL := -n $(TEST_WORKERS) --dist loadgroup --no-loadscope-reorder
test:
	@$(MAKE) --no-print-directory -j2 --output-sync=target test-ready
	$(call beside_node,$(PY) -m pytest $(PYTEST_PARALLEL))

# What the tests need, two steps at a time (the model's export beside the other set-up steps).
test-ready: lint site browser pyodide-wheels bench-peer-deps

# The inner loop (under 3 minutes): every CPython test but the ONNX exports, the node tests and
# one browser smoke test (a page with a Python widget and a model widget, as a reader loads it).
test-fast:
	@$(MAKE) --no-print-directory -j2 --output-sync=target test-ready
	$(call beside_node,$(PY) -m pytest $(PYTEST_PARALLEL) -m "smoke or not (browser or slow)")

# Runs the whole suite with every test's duration and rewrites tests/durations.json (the
# order in which pytest -n shares the groups out) and the table in tests/README.md.
test-durations:
	@$(MAKE) --no-print-directory -j2 --output-sync=target test-ready
	TX_TEST_DURATIONS=build/test-durations.json $(PY) -m pytest $(PYTEST_PARALLEL)
	$(PY) tests/durations.py build/test-durations.json

# $(call beside_node,COMMAND): COMMAND with `node --test tests/js/` running beside it; its
# output follows COMMAND's, and the recipe fails when either failed.
define beside_node
@mkdir -p build; node --test tests/js/ > build/node-test.log 2>&1 & node=$$!; \
	echo '$(1)'; $(1); status=$$?; \
	wait $$node; node_status=$$?; echo "--- node --test tests/js/ (beside it):"; tail -n 12 build/node-test.log; \
	[ $$status -eq 0 ] && [ $$node_status -eq 0 ]
endef

# Lint and format checks: ruff (pycodestyle, pyflakes, import order, bugbear, pyupgrade, and its
# formatter; pyproject.toml) on the Python, prettier (.prettierrc.json) on the browser JS and CSS.
PRETTIER := node_modules/.bin/prettier
PRETTIER_FILES := "site_src/**/*.{js,css}" "tests/**/*.{js,mjs}"
lint: | setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(PRETTIER) --check --log-level warn $(PRETTIER_FILES)

# Rewrite the tree so that `make lint` passes (import order, formatting).
format: | setup
	$(VENV)/bin/ruff check --fix --select I .
	$(VENV)/bin/ruff format .
	$(PRETTIER) --write --log-level warn $(PRETTIER_FILES)

setup: $(VENV_STAMP) $(NPM_STAMP)

$(VENV_STAMP): pyproject.toml constraints.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check --no-compile -c constraints.txt -e '.[export,docs,test]'
	touch $@

$(NPM_STAMP): package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	touch $@

assets: $(VENDOR)
$(VENDOR): sitebuild/assets.py package-lock.json | setup
	$(PY) -m sitebuild.assets

# Export, quantize, validate, write the pipeline figures' tables and the inspect graphs,
# package and report (`model-export all`); a failed validation leaves no manifest, so the site
# is not built from unchecked files and the next run retries. Any change to the exporter
# rebuilds the model.
model: $(MANIFEST)
$(MANIFEST): $(wildcard model_export/*.py model_export/data/* model_export/book_model/*) | setup
	$(VENV)/bin/model-export all $(MODEL_FROM) --out $(MODEL_DIR) || { rm -f $(MANIFEST); exit 1; }

site: setup assets model
	$(VENV)/bin/mkdocs build --strict --quiet --site-dir $(SITE_DIR)

# A Chromium for the browser tests: an existing one, else Debian's package when
# running as root on Debian, else Playwright's own download (needs internet).
browser: setup
	$(PY) -m sitebuild.chromium --ensure

# pytest and friends as pure-Python wheels, to run the demos tests inside Pyodide.
PYODIDE_WHEELS := build/cache/pyodide-wheels/.downloaded
pyodide-wheels: $(PYODIDE_WHEELS)
$(PYODIDE_WHEELS): tests/pyodide/requirements.txt | setup
	$(PY) -m pip download --quiet --disable-pip-version-check --no-deps --only-binary :all: \
	  --platform any --python-version 3.12 --implementation py \
	  -r tests/pyodide/requirements.txt -d $(@D)
	touch $@

# The peer that bench/peer.py measures the site's runtime against: Transformers.js and the
# onnxruntime-web it depends on, a bench-only install in its own folder (a few seconds; the
# browser test of bench/peer.py needs it). No install scripts and no optional packages, so no
# native binaries: bench/peer/package.json puts onnxruntime-common in onnxruntime-node's place
# (113 MB of Node binaries that the browser bundle never loads), and sharp comes without its own.
PEER_STAMP := bench/peer/node_modules/.installed
bench-peer-deps: $(PEER_STAMP)
$(PEER_STAMP): bench/peer/package.json bench/peer/package-lock.json
	cd bench/peer && npm ci --ignore-scripts --omit=optional --no-audit --no-fund --loglevel=error
	touch $@

# GitHub Pages' limits (no file of 100 MB or more, the site under 1 GB), checked on the
# built site with a report of its sizes; the Pages workflow runs it before deploying.
check-budgets: | setup
	$(PY) -m sitebuild.check_budgets $(SITE_DIR)

clean:
	rm -rf site build/vendor build/models

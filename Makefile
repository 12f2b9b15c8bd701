# Two entry points for a fresh machine; each sets up .venv from PyPI first.
#   make demo   generate, simulate and verify the blocks on bundled real data
#   make test   ruff, then the full test suite (co-simulation, lint, synthesis)
#   make soak   the long randomized soak runs as well
#   make docs   the API reference (Sphinx, warnings as errors) in docs/_build/html

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
JOBS ?= 2

.PHONY: demo test soak setup

setup: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $@

demo: $(STAMP)
	$(BIN)/sparseforge demo

test: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/pytest -n $(JOBS) --dist worksteal

soak: $(STAMP)
	$(BIN)/pytest -n $(JOBS) --dist worksteal --soak -m soak

.PHONY: docs
docs: $(STAMP)
	$(BIN)/sphinx-build -W --keep-going -b html docs docs/_build/html

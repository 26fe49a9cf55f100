# Inside the Kubelet: set-up, site and tests. `make help` lists the targets.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
export NO_MKDOCS_2_WARNING := 1

.PHONY: help serve build test test-fast lab labs bench clean

help:  ## List the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-10s %s\n", $$1, $$2}'

$(STAMP): requirements.txt pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements.txt
	$(BIN)/python -m ipykernel install --sys-prefix --name python3 >/dev/null
	touch $(STAMP)

serve: $(STAMP)  ## Serve the course at http://127.0.0.1:8000 (rebuilds what changed)
	$(BIN)/mkdocs serve --dirty --no-strict --dev-addr 127.0.0.1:8000

build: $(STAMP)  ## Build the static site into site/
	$(BIN)/mkdocs build --strict

test: $(STAMP)  ## Every test: unit, labs, notebooks, strict site build, browser
	$(BIN)/python -m pytest

test-fast: $(STAMP)  ## The tests that need neither a site build nor a browser
	$(BIN)/python -m pytest -m "not site"

lab: $(STAMP)  ## JupyterLab on the lab notebooks in labs/
	$(BIN)/jupyter lab --notebook-dir=labs

labs: $(STAMP)  ## Regenerate the learner notebooks in labs/ from labs/src/
	$(BIN)/mini-kubelet labs build

bench: $(STAMP)  ## Time the course's tools on its examples (prints figures)
	$(BIN)/python benchmarks/bench.py

clean:  ## Remove the built site and caches (keeps .venv)
	rm -rf site .pytest_cache .hypothesis

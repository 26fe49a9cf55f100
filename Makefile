# Inside the Kubelet: set-up, site and tests. `make help` lists the targets.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# Install from a folder of wheels, with no network: `make lab WHEELS=path/to/offline/wheels`.
WHEELS ?=
PIP_FROM := $(if $(WHEELS),--no-index --find-links $(abspath $(WHEELS)))
export NO_MKDOCS_2_WARNING := 1

.PHONY: help install serve build test test-fast test-upstream lab labs bench offline check-upstream clean

help:  ## List the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-15s %s\n", $$1, $$2}'

# What to install: everything (requirements.txt), or from a folder of `make offline` wheels what learners need.
REQUIREMENTS ?= $(if $(WHEELS),requirements-learner.txt,requirements.txt)

# pip runs only when something in the list is missing, so a target needs no network otherwise.
$(STAMP): requirements.txt requirements-learner.txt pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	if $(BIN)/python tools/requirements_met.py $(REQUIREMENTS) >/dev/null; then \
	  echo "$(VENV) has everything in $(REQUIREMENTS)"; \
	else \
	  $(BIN)/python -m pip install --quiet $(PIP_FROM) --upgrade pip && \
	  $(BIN)/python -m pip install --quiet $(PIP_FROM) -r $(REQUIREMENTS); \
	fi
	$(BIN)/python -m ipykernel install --sys-prefix --name python3 >/dev/null
	touch $(STAMP)

install: $(STAMP)  ## Create .venv from requirements.txt (every other target does it when needed)

serve: $(STAMP)  ## Serve the course at http://127.0.0.1:8000 (rebuilds what changed)
	$(BIN)/mkdocs serve --dirty --no-strict --dev-addr 127.0.0.1:8000

build: $(STAMP)  ## Build the static site into site/
	$(BIN)/mkdocs build --strict

test: $(STAMP)  ## Every test: unit, labs, notebooks, strict site build, browser (the real API server's: test-upstream)
	$(BIN)/python -m pytest -m "not apiserver"

test-fast: $(STAMP)  ## The tests that need neither a site build nor a browser
	$(BIN)/python -m pytest -m "not site and not apiserver"

test-upstream: $(STAMP)  ## Against upstream's Go: the differential tests (2000 inputs a function), watch on a real API server
	DIFFERENTIAL_EXAMPLES=$(or $(EXAMPLES),2000) $(BIN)/python -m pytest -m upstream --dist loadgroup

# JupyterLab refuses to run as root (a container's user, often) unless told it may.
USER_ID ?= $(shell id -u)

lab: $(STAMP)  ## JupyterLab on the lab notebooks in labs/ (their solutions, labs/src/, not in its file browser)
	$(BIN)/jupyter lab$(if $(filter 0,$(USER_ID)), --allow-root) --notebook-dir=labs --KernelManager.transport_encryption=auto --ContentsManager.hide_globs=src

labs: $(STAMP)  ## Regenerate the learner notebooks in labs/ from labs/src/
	$(BIN)/mini-kubelet labs build

bench: $(STAMP)  ## Time the course's tools on its examples (prints figures)
	$(BIN)/python benchmarks/bench.py

offline: $(STAMP)  ## One folder for a room with no network: wheels, site, notebooks (OUT=offline)
	$(BIN)/python tools/offline.py --out $(or $(OUT),offline) $(if $(SOLUTIONS),--solutions $(SOLUTIONS)) \
	  $(if $(PLATFORMS),--platform $(PLATFORMS)) $(if $(PYTHON_VERSIONS),--python-version $(PYTHON_VERSIONS))

check-upstream: $(STAMP)  ## Check every upstream reference against a kubernetes checkout (KUBERNETES=path TAG=tag)
	$(BIN)/python tools/check_upstream.py --kubernetes "$(KUBERNETES)" $(if $(TAG),--tag $(TAG))

clean:  ## Remove the built site and caches (keeps .venv)
	rm -rf site offline .pytest_cache .hypothesis

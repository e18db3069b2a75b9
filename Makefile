# The two commands of the README: `make demo` and `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# The runtime alone (make demo); the test stamp implies it.
RUNTIME_STAMP := $(VENV)/.installed-runtime
# The runtime and the official MCP SDK (make demo-gateway); the test stamp implies it.
GATEWAY_DEMO_STAMP := $(VENV)/.installed-gateway-demo
# The directories ruff checks (examples/ when present).
LINTED := supervisors erlmcp_py tests benchmarks $(wildcard examples)

.PHONY: demo demo-gateway test lint typecheck pytest bench-quick screenshots clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(RUNTIME_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -U pip
	$(BIN)/python -m pip install -q -e .
	touch $(RUNTIME_STAMP)

# The test tools (pytest, hypothesis, ruff, mypy, the official SDK and browser driver as peers).
$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -U pip
	$(BIN)/python -m pip install -q -e '.[test]'
	touch $(STAMP) $(RUNTIME_STAMP) $(GATEWAY_DEMO_STAMP)

$(GATEWAY_DEMO_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -U pip
	$(BIN)/python -m pip install -q -e '.[gateway-demo]'
	touch $(GATEWAY_DEMO_STAMP) $(RUNTIME_STAMP)

# Runs the example server over stdio and drives it with a scripted client (a readable transcript).
# Installs the runtime alone: the demo needs none of the test tools.
demo: $(RUNTIME_STAMP)
	$(BIN)/erlmcp-py demo

# erlmcp-py gateway in front of a server on the official MCP SDK, nothing to configure: its
# questions asked through the runtime, driven by a scripted client.
demo-gateway: $(GATEWAY_DEMO_STAMP)
	$(BIN)/erlmcp-py demo --gateway

test: lint typecheck pytest

lint: $(STAMP)
	$(BIN)/ruff check $(LINTED)
	$(BIN)/ruff format --check $(LINTED)

typecheck: $(STAMP)
	$(BIN)/mypy supervisors erlmcp_py

# `-p no:cacheprovider` keeps clean clones clean; exit code 5 (no tests collected) is a failure.
pytest: $(STAMP)
	$(BIN)/python -m pytest -p no:cacheprovider $(PYTEST_ARGS)

bench-quick: $(STAMP)
	for b in benchmarks/bench_*.py; do $(BIN)/python $$b --quick || exit 1; done

# PNGs of the hosted elicitation page in en-US and pt-BR (headless Chromium, /usr/bin/chromium).
screenshots: $(STAMP)
	ERLMCP_SCREENSHOTS=docs/screenshots $(BIN)/python -m pytest -p no:cacheprovider -q \
		tests/transports/test_page_browser.py -k every_field_type

clean:
	rm -rf $(VENV) build *.egg-info

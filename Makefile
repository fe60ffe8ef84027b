# evalctl developer targets. `make setup` then `make test` is the whole set-up.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# Where `make data` takes the upstream data releases from: a folder holding all five (eva-0.1.3/,
# eva-2.1.0/, tau2-17e07b1/, tau2-v0.2.0/, nemo-1a83139/, as the README lists them); a release
# missing there is downloaded at its pinned tag. The default suits a clone next to `shared/`.
EVA_SOURCE ?= ../shared
DATA_ROOT ?= data
# What `make setup` installs: the developer tools and every optional feature (pyproject.toml's
# extras). A user's install is `pip install .` from a clone (or `'.[otel]'`...): README "Install".
DEV_EXTRAS ?= dev,ray,report-tests,voice,pipecat,livekit,otel

.PHONY: setup bytecode data test lint schemas bench screenshot smoke-real clean

setup: $(BIN)/evalctl data bytecode

# Byte-compile the engine, as a regular (not editable) install does: every `evalctl` command
# then starts without compiling its sources, even where PYTHONDONTWRITEBYTECODE is set.
bytecode: $(BIN)/evalctl
	$(BIN)/python -m compileall -q engine cli.py

$(BIN)/evalctl: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[$(DEV_EXTRAS)]'
	@touch $@

data: $(BIN)/evalctl
	$(BIN)/python -m engine.core.datafetch --source '$(EVA_SOURCE)' --dest '$(DATA_ROOT)'

# The suite runs on TEST_WORKERS processes (pytest-xdist; `auto`: one per core), each test file on
# one worker so its module fixtures are built once. PYTHONDONTWRITEBYTECODE is dropped for pytest
# alone: with it set, pytest rewrote the asserts of every test module anew in every worker at each
# start (tests/README.md "Running": what the suite costs).
TEST_WORKERS ?= auto
test: $(BIN)/evalctl
	env -u PYTHONDONTWRITEBYTECODE $(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadfile

lint: $(BIN)/evalctl
	$(BIN)/ruff check .
	$(BIN)/lint-imports --no-cache
	$(BIN)/mypy

# the success_signals enums of the spec schemas, from the signal registry's built-in signals
schemas: $(BIN)/evalctl
	$(BIN)/python -c "from engine.core.validation import write_schemas; \
	from engine.scoring.signals import BUILTIN_REGISTRY; write_schemas(BUILTIN_REGISTRY.gating_names())"

bench: bytecode
	$(BIN)/python -m tests.bench

# docs/report.png, the README's picture of `evalctl report --html` (needs chromium + chromium-driver)
screenshot: $(BIN)/evalctl
	$(BIN)/python -m tests.screenshot docs/report.png

# Two eva scenarios against a real tiny model served on loopback (no API key; needs Node.js 20+ and
# the package registries once). Installs into $$EVALCTL_SMOKE_CACHE, else ~/.cache/evalctl-smoke.
# Not part of `make test`: minutes of CPU. README "Try evalctl with no API key".
smoke-real: $(BIN)/evalctl
	$(BIN)/python -m tests.smoke_real

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .mypy_cache

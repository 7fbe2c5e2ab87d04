# Two commands for a newcomer: `make demo` (install + run the main job) and `make test`.
PYTHON ?= python3.11
VENV ?= .venv
BIN := $(VENV)/bin
# The CPU build of torch; pip on these machines finds it on local disk. Elsewhere, point
# TORCH_PIP_ARGS at PyTorch's CPU wheel index to avoid a multi-GB CUDA download.
TORCH_PIP_ARGS ?=
export PREFECT_SERVER_ANALYTICS_ENABLED ?= false
export HF_HUB_OFFLINE ?= 1
export TRANSFORMERS_OFFLINE ?= 1

.PHONY: install browser demo test test-quick lint bench ui clean

install: $(VENV)/.installed browser

# The desk's browser tests drive the distribution's Chromium with Selenium (tests/desk/test_browser.py).
# Installed when missing and we may (root, apt); otherwise the command to run is printed and those tests skip.
browser:
	@command -v chromedriver >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver; \
	  else echo "for the desk's browser tests: sudo apt-get install chromium chromium-driver"; fi; }

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet torch==2.13.0 $(TORCH_PIP_ARGS)
	$(BIN)/pip install --quiet -e '.[dev,dask]'
	touch $@

demo: install
	$(BIN)/chronicle demo

# Bytecode is written even where the environment says not to (PYTHONDONTWRITEBYTECODE): the suite starts
# hundreds of Python processes (commands, flow runs, workers) that would each compile the project's modules
# again, and every xdist worker would rewrite every test module's assertions again.
PYTEST = env -u PYTHONDONTWRITEBYTECODE $(BIN)/python -m pytest

test: install
	$(PYTEST) -q

# The quick layer: the core and storage, no Prefect server (README "Tests"); `-m "not slow"` adds the flows.
test-quick: install
	$(PYTEST) -q -m "not slow and not flows"

lint: install
	$(BIN)/ruff check .

bench: install
	$(BIN)/python -m bench.run_all

ui: install
	$(BIN)/prefect server start

clean:
	rm -rf $(VENV) .chronicle

# Python asyncio hook benchmark (bench/spans/python_context.py): ns per asyncio task switch with
# and without spanprof_context's hook, as a ratio to the SDK's own context attach+detach in the
# same run. Runs in a virtualenv made under $(BUILD) with the pinned SDK and writer/python
# installed with pip (BENCH_PYTHON picks the interpreter). No root. Never fails on the figures.
#   make bench-python-context [BENCH_PYTHON=python3.12] [BENCH_PYTHON_CONTEXT_ARGS="-r 11"]

BENCH_PYTHON ?= python3
BENCH_PYTHON_CONTEXT_ARGS ?=
BENCH_PY_VENV = $(BUILD)/bench/python-context-venv

.PHONY: bench-python-context
bench: bench-python-context

bench-python-context:
	$(Q)test -x $(BENCH_PY_VENV)/bin/python || $(BENCH_PYTHON) -m venv $(BENCH_PY_VENV)
	$(Q)$(BENCH_PY_VENV)/bin/python -c "import opentelemetry.sdk" 2>/dev/null || \
		$(BENCH_PY_VENV)/bin/pip install -q --disable-pip-version-check \
		opentelemetry-api==1.27.0 opentelemetry-sdk==1.27.0
	$(Q)SPANPROF_PY_BUILD=$(abspath $(BUILD))/writer/python-build-bench \
		$(BENCH_PY_VENV)/bin/pip install -q --disable-pip-version-check --no-deps \
		--force-reinstall writer/python
	$(Q)$(BENCH_PY_VENV)/bin/python bench/spans/python_context.py $(BENCH_PYTHON_CONTEXT_ARGS)

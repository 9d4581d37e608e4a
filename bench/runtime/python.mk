# BPF time per sample with the Python walk on and off (bench/runtime/python_bpf.c), on a CPython process
# spinning PY_BENCH_DEPTH frames deep. Needs root. See docs/performance.md, "Python frames".
#   make bench-python [PY_BENCH_PYTHON=path] [PY_BENCH_DEPTH=10] [PY_BENCH_ARGS="3 3"]

PY_BENCH_PYTHON ?= $(firstword $(wildcard $(HOME)/.pyenv/versions/3.12.*/bin/python3.12) \
	/usr/bin/python3.11)
PY_BENCH_DEPTH  ?= 10
PY_BENCH_ARGS   ?= 3 3

$(BUILD)/bench/python_bpf: bench/runtime/python_bpf.c bench/workloads/pyspin.py $(LIBSPANPROF)
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -DBENCH_DIR='"$(abspath bench)"' $< $(LIBSPANPROF) $(LDLIBS) -o $@

.PHONY: bench-python
bench: bench-python

bench-python: $(BUILD)/bench/python_bpf
	$(Q)$(BUILD)/bench/python_bpf $(PY_BENCH_PYTHON) $(PY_BENCH_DEPTH) $(PY_BENCH_ARGS)

# The agent's CPU and RSS on a machine running 20 CPU-busy CPython processes
# (bench/runtime/python_agent.py): spanprof (whole host, default rate) with the Python walk on and
# off, against py-spy record (and --native) at the same rate, one instance per process, in one
# invocation; BPF time per sample with kernel.bpf_stats_enabled=1 (restored after). Needs root and
# py-spy. Prints ratios against the same invocation; never fails on the figures. See
# docs/performance.md, "Python frames".
#   make bench-python-agent [BUILD=dir] [BENCH_PYTHON_AGENT_ARGS="--rounds 5 --seconds 20"]

BENCH_PYTHON_AGENT_ARGS ?=

.PHONY: bench-python-agent
bench: bench-python-agent

bench-python-agent: $(BUILD)/spanprof
	$(Q)python3 bench/runtime/python_agent.py --build $(BUILD) $(BENCH_PYTHON_AGENT_ARGS)

# The Python walk against the native CFI walk of the same depth (issue 14's target), measured
# the same way in one invocation (bench/runtime/python_vs_cfi.py). Needs root and bpftool.
#   make bench-python-cfi [BUILD=dir] [PY_BENCH_PYTHON=path] [BASELINE=dir]
#       [BENCH_PYTHON_CFI_ARGS="--depths 10,50"]
# BASELINE: another build directory (e.g. main's) measured in the same rounds.

BENCH_PYTHON_CFI_ARGS ?=
BASELINE ?=

.PHONY: bench-python-cfi
bench: bench-python-cfi

bench-python-cfi: $(BUILD)/spanprof
	$(Q)python3 bench/runtime/python_vs_cfi.py --build $(BUILD) --python $(PY_BENCH_PYTHON) \
		$(if $(BASELINE),--baseline $(BASELINE)) $(BENCH_PYTHON_CFI_ARGS)

# Python frames in the agent's first seconds for CPython processes started before it
# (bench/runtime/python_early.py): the share of the workload's stacks with a Python frame, against
# BASELINE_BIN (another spanprof binary, e.g. main's) in the same rounds. Needs root.
#   make bench-python-early [BUILD=dir] [BASELINE_BIN=path] [BENCH_PYTHON_EARLY_ARGS="--rounds 3"]

BENCH_PYTHON_EARLY_ARGS ?=
BASELINE_BIN ?=

.PHONY: bench-python-early
bench: bench-python-early

bench-python-early: $(BUILD)/spanprof
	$(Q)python3 bench/runtime/python_early.py --build $(BUILD) \
		$(if $(BASELINE_BIN),--baseline $(BASELINE_BIN)) $(BENCH_PYTHON_EARLY_ARGS)

# The Python walk and the native CFI walk of the same depth, each timed whole inside the BPF
# program (bench/runtime/walk_time.py): a build with -DSP_WALK_TIMING in $(BUILD)-walktime
# (the agent's own build is left as it is). Needs root and bpftool.
#   make bench-walk-time [BUILD=dir] [PY_BENCH_PYTHON=path] [BENCH_WALK_TIME_ARGS="--rounds 3"]

BENCH_WALK_TIME_ARGS ?=

.PHONY: bench-walk-time
bench: bench-walk-time

bench-walk-time:
	$(Q)$(MAKE) --no-print-directory BUILD=$(BUILD)-walktime BPF_EXTRA=-DSP_WALK_TIMING all
	$(Q)python3 bench/runtime/walk_time.py --build $(BUILD)-walktime --python $(PY_BENCH_PYTHON) \
		$(BENCH_WALK_TIME_ARGS)

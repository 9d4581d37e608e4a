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

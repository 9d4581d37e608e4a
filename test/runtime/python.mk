# Unit tests of exporter/runtime/python/ (CPython detection, layouts, line tables, the
# out-of-process frame and name reader). Each installed CPython 3.8-3.13 (pyenv), Debian's
# /usr/bin/python3.11 and Debian sid's 3.14 (make cpython-3.14, in $(BUILD)) runs
# test/runtime/python-progs/known.py; the test reads it from outside. No root.

PY_TEST_CFLAGS := -DPY_PROGS_DIR='"$(abspath test/runtime/python-progs)"' \
	-DPY_CPYTHON314='"$(abspath $(BUILD)/cpython-3.14/root/usr/bin/python3.14)"'

# A binary named like an interpreter with two of CPython's names but no interpreter loop.
PY_NOT_CPYTHON := $(BUILD)/test/runtime/not-cpython/python3.12
$(PY_NOT_CPYTHON): test/runtime/python-progs/not_cpython.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) -O1 $< -o $@

$(BUILD)/test/runtime/test_python: test/runtime/test_python.c test/testproc.h test/runtime/python-progs/known.py \
		$(wildcard exporter/runtime/python/*.h) $(LIBSPANPROF) $(PY_NOT_CPYTHON)
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(PY_TEST_CFLAGS) -DPY_NOT_CPYTHON='"$(abspath $(PY_NOT_CPYTHON))"' $< \
		$(LIBSPANPROF) $(LDLIBS) -lcmocka -o $@

UNIT_TESTS += $(BUILD)/test/runtime/test_python

# The walk in BPF on the real kernel (root: CAP_BPF, CAP_PERFMON; skipped, saying so, without).
$(BUILD)/test/runtime/test_python_bpf: test/runtime/test_python_bpf.c test/testproc.h test/runtime/python-progs/spin.py \
		$(wildcard exporter/runtime/python/*.h) bpf/python.h $(LIBSPANPROF)
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(PY_TEST_CFLAGS) $< $(LIBSPANPROF) $(LDLIBS) -lcmocka -o $@

UNIT_TESTS += $(BUILD)/test/runtime/test_python_bpf

# Unit tests of the configuration file (exporter/cli/config.c) and of the precedence of flags,
# environment, file and defaults of `spanprof record`. The precedence lives in exporter/cli/main.c
# (its argp table is the list of keys), so the test links main.c compiled with main renamed
# (exporter/cli/cli.h) against the agent's archive. No root.

CONFIG_TEST_MAIN_O := $(BUILD)/test/main_cli.o

$(CONFIG_TEST_MAIN_O): exporter/cli/main.c $(EXP_HDRS) $(wildcard bpf/*.h) \
		$(BPF_SKELS) $(PROTO_H)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -Dmain=spanprof_main -c $< -o $@

$(BUILD)/test/test_config: test/cli/test_config.c $(CONFIG_TEST_MAIN_O) $(LIBSPANPROF)
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(filter %.c %.o %.a,$^) $(LDLIBS) -lcmocka -o $@

UNIT_TESTS += $(BUILD)/test/test_config

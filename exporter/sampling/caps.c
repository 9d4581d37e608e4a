// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/prctl.h>

#include "sampling/caps.h"

#ifndef CAP_PERFMON
#define CAP_PERFMON 38
#endif
#ifndef CAP_BPF
#define CAP_BPF 39
#endif
#ifndef CAP_CHECKPOINT_RESTORE
#define CAP_CHECKPOINT_RESTORE 40
#endif

/* What the running agent keeps (caps.h says why). */
static const cap_value_t keep[] = {
    CAP_BPF,	      CAP_SYS_PTRACE, CAP_SYS_ADMIN, CAP_CHECKPOINT_RESTORE, CAP_DAC_READ_SEARCH,
    CAP_DAC_OVERRIDE, CAP_SYSLOG,
};

static int has(cap_t c, cap_value_t v)
{
	cap_flag_value_t f = CAP_CLEAR;

	if (!CAP_IS_SUPPORTED(v))
		return 0;
	cap_get_flag(c, v, CAP_EFFECTIVE, &f);
	return f == CAP_SET;
}

int caps__check(char *msg, size_t msglen)
{
	cap_t c = cap_get_proc();
	int admin, bpf, perfmon, ptrace;

	msg[0] = '\0';
	if (!c)
		return -errno;
	admin = has(c, CAP_SYS_ADMIN);
	bpf = has(c, CAP_BPF) || admin;
	perfmon = has(c, CAP_PERFMON) || admin;
	ptrace = has(c, CAP_SYS_PTRACE);
	cap_free(c);
	if (!bpf || !perfmon) {
		snprintf(
		    msg, msglen,
		    "missing privileges: sampling needs %s%s%s (or CAP_SYS_ADMIN); run as root "
		    "or grant them (docs/deploy.md)",
		    bpf ? "" : "CAP_BPF", !bpf && !perfmon ? " and " : "",
		    perfmon ? "" : "CAP_PERFMON");
		return -EPERM;
	}
	if (!ptrace)
		fprintf(stderr, "spanprof: warning: no CAP_SYS_PTRACE: processes of other users "
				"are sampled but their frames, unwind tables and span links are "
				"not read\n");
	return 0;
}

int caps__drop_after_load(void)
{
	cap_t c = cap_get_proc(), n = NULL;
	int dropped = 0, err = 0;

	if (!c)
		return -errno;
	n = cap_init();
	if (!n) {
		err = -errno;
		goto out;
	}
	for (size_t i = 0; i < sizeof(keep) / sizeof(keep[0]); i++) {
		cap_flag_value_t f = CAP_CLEAR;

		if (!CAP_IS_SUPPORTED(keep[i]))
			continue;
		cap_get_flag(c, keep[i], CAP_PERMITTED, &f);
		if (f != CAP_SET)
			continue;
		cap_set_flag(n, CAP_PERMITTED, 1, &keep[i], CAP_SET);
		cap_get_flag(c, keep[i], CAP_EFFECTIVE, &f);
		if (f == CAP_SET)
			cap_set_flag(n, CAP_EFFECTIVE, 1, &keep[i], CAP_SET);
	}
	for (cap_value_t v = 0; v <= CAP_LAST_CAP; v++) {
		cap_flag_value_t f = CAP_CLEAR, k = CAP_CLEAR;

		cap_get_flag(c, v, CAP_PERMITTED, &f);
		cap_get_flag(n, v, CAP_PERMITTED, &k);
		if (f == CAP_SET && k != CAP_SET)
			dropped++;
	}
	/* The bounding set first: that needs CAP_SETPCAP, which goes with the rest below. */
	if (has(c, CAP_SETPCAP))
		for (cap_value_t v = 0; v <= CAP_LAST_CAP; v++) {
			cap_flag_value_t k = CAP_CLEAR;

			cap_get_flag(n, v, CAP_PERMITTED, &k);
			if (k != CAP_SET && CAP_IS_SUPPORTED(v) && prctl(PR_CAPBSET_READ, v) == 1)
				prctl(PR_CAPBSET_DROP, v, 0, 0, 0);
		}
	if (cap_set_proc(n))
		err = -errno;
out:
	cap_free(n);
	cap_free(c);
	return err ? err : dropped;
}

int caps__describe(char *out, size_t len)
{
	cap_t c = cap_get_proc();
	size_t used = 0;

	if (!len)
		return -EINVAL;
	out[0] = '\0';
	if (!c)
		return -errno;
	for (cap_value_t v = 0; v <= CAP_LAST_CAP; v++) {
		cap_flag_value_t f = CAP_CLEAR;
		char *name;

		cap_get_flag(c, v, CAP_PERMITTED, &f);
		if (f != CAP_SET)
			continue;
		name = cap_to_name(v);
		if (!name)
			continue;
		used += snprintf(out + used, used < len ? len - used : 0, "%s%s", used ? "," : "",
				 name);
		cap_free(name);
	}
	cap_free(c);
	if (used >= len)
		out[len - 1] = '\0';
	return 0;
}

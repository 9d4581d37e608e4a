// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/prctl.h>
#include <unistd.h>

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

/* An integer sysctl under /proc/sys (@path), or -1 when absent or unreadable. */
static int sysctl_int(const char *path)
{
	FILE *f = fopen(path, "re");
	int v = -1;

	if (!f)
		return -1;
	if (fscanf(f, "%d", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

int caps__kallsyms_msg(int kptr_restrict, int paranoid, int syslog, char *msg, size_t msglen)
{
	msg[0] = '\0';
	/* kernel/kallsyms.c, kallsyms_show_value(): 0 shows them to perf-capable readers
	 * (perf_event_paranoid <= 1), 1 only to CAP_SYSLOG, 2 to no one. */
	if (kptr_restrict >= 2) {
		snprintf(msg, msglen,
			 "kernel.kptr_restrict=%d hides kernel symbol addresses in /proc/kallsyms "
			 "from every reader: kernel frames are not named (set it to 1%s)",
			 kptr_restrict, syslog ? "" : " and grant spanprof CAP_SYSLOG");
		return 1;
	}
	if (syslog || (kptr_restrict == 0 && paranoid >= 0 && paranoid <= 1))
		return 0;
	if (kptr_restrict < 0 || paranoid < 0)
		snprintf(msg, msglen,
			 "no CAP_SYSLOG: kernel frames are not named unless "
			 "kernel.kptr_restrict is 0 and kernel.perf_event_paranoid 1 "
			 "or less (/proc/kallsyms hides kernel symbol addresses)");
	else
		snprintf(msg, msglen,
			 "no CAP_SYSLOG: kernel frames are not named (/proc/kallsyms hides kernel "
			 "symbol addresses from readers without it when kernel.kptr_restrict is 1, "
			 "or 0 with kernel.perf_event_paranoid above 1; here kptr_restrict=%d, "
			 "perf_event_paranoid=%d)",
			 kptr_restrict, paranoid);
	return 1;
}

void caps__ptrace_msg(int yama_scope, char *msg, size_t msglen)
{
	/* ptrace_may_access() (kernel/ptrace.c) and cap_ptrace_access_check() (security/
	 * commoncap.c); Yama (security/yama/yama_lsm.c) on top for memory reads (ATTACH mode). */
	snprintf(msg, msglen,
		 "no CAP_SYS_PTRACE: processes are sampled, but the memory and files (unwind "
		 "tables, symbols, Python and V8 frames, span links) are read only of processes "
		 "spanprof may ptrace: of its own user, dumpable and holding no capability it "
		 "lacks%s; the frames of the others (root's own processes that kept their "
		 "capabilities too) stay addresses",
		 yama_scope >= 1 ? ", and only its own descendants (kernel.yama.ptrace_scope >= 1)"
				 : "");
}

/* include/linux/proc_ns.h: the inode number of the initial PID namespace, fixed. */
#define PROC_PID_INIT_INO 0xEFFFFFFCu

int caps__pidns_msg(const char *link, char *msg, size_t msglen)
{
	char want[32];

	msg[0] = '\0';
	snprintf(want, sizeof(want), "pid:[%u]", PROC_PID_INIT_INO);
	if (!strcmp(link, want))
		return 0;
	snprintf(msg, msglen,
		 "running in a PID namespace of its own (%s), not the host's: the kernel's "
		 "process IDs would not be this /proc's; run it in the host's PID namespace "
		 "(hostPID: true in Kubernetes, --pid=host for docker; docs/deploy.md)",
		 link);
	return -EPERM;
}

int caps__check(char *msg, size_t msglen)
{
	char warn[512], link[64];
	ssize_t n;
	cap_t c = cap_get_proc();
	int admin, bpf, perfmon, ptrace, syslog;

	msg[0] = '\0';
	if (!c)
		return -errno;
	/* The samples carry the host's PIDs: a PID namespace of its own would name others. */
	n = readlink("/proc/self/ns/pid", link, sizeof(link) - 1);
	if (n > 0) {
		link[n] = '\0';
		if (caps__pidns_msg(link, msg, msglen)) {
			cap_free(c);
			return -EPERM;
		}
	}
	admin = has(c, CAP_SYS_ADMIN);
	bpf = has(c, CAP_BPF) || admin;
	perfmon = has(c, CAP_PERFMON) || admin;
	ptrace = has(c, CAP_SYS_PTRACE);
	syslog = has(c, CAP_SYSLOG);
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
	if (!ptrace) {
		caps__ptrace_msg(sysctl_int("/proc/sys/kernel/yama/ptrace_scope"), warn,
				 sizeof(warn));
		fprintf(stderr, "spanprof: warning: %s\n", warn);
	}
	if (caps__kallsyms_msg(sysctl_int("/proc/sys/kernel/kptr_restrict"),
			       sysctl_int("/proc/sys/kernel/perf_event_paranoid"), syslog, warn,
			       sizeof(warn)))
		fprintf(stderr, "spanprof: warning: %s\n", warn);
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

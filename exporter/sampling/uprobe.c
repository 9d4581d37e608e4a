/* SPDX-License-Identifier: Apache-2.0 */
/* Uprobes beside other tools' uprobes: see uprobe.h. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sampling/uprobe.h"

#define MISMATCH "ref_ctr_offset mismatch. inode: "

/* Records read after a refusal, at most: the log lines of one failed registration and whatever
 * else the kernel logged meanwhile on a busy host. */
#define KMSG_MAX_RECORDS 4096

int uprobe__parse_mismatch(const char *record, uint64_t ino, uint64_t offset, uint64_t *old)
{
	/* A /dev/kmsg record has its text after the first ';': the line is found either way. */
	const char *text = strstr(record, MISMATCH);
	unsigned long long i, o, rc_old, rc_new;

	if (!text)
		return 0;
	if (sscanf(text,
		   MISMATCH "%llx offset: %llx ref_ctr_offset(old): %llx "
			    "ref_ctr_offset(new): %llx",
		   &i, &o, &rc_old, &rc_new) != 4)
		return 0;
	if (i != ino || (offset != UINT64_MAX && o != offset))
		return 0;
	*old = rc_old;
	return 1;
}

/*
 * The counter of the uprobe at (@ino, @offset) that refused ours: the last matching line that
 * the kernel logged since @kfd was positioned. 1 and *@old set, 0 when none, -errno.
 */
static int kmsg_find(int kfd, uint64_t ino, uint64_t offset, uint64_t *old)
{
	char rec[1024];
	int found = 0;

	for (int n = 0; n < KMSG_MAX_RECORDS; n++) {
		ssize_t r = read(kfd, rec, sizeof(rec) - 1);

		if (r < 0 && errno == EPIPE) /* records overwritten meanwhile: go on */
			continue;
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		rec[r] = 0;
		found |= uprobe__parse_mismatch(rec, ino, offset, old);
	}
	return found;
}

static int silent(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	(void)level;
	(void)fmt;
	(void)ap;
	return 0;
}

/* The attachments after a refusal, without libbpf's warning for each: the caller says why. */
static struct bpf_link *attach_quiet(struct bpf_program *prog, pid_t pid, const char *path,
				     size_t offset, const struct bpf_uprobe_opts *opts)
{
	libbpf_print_fn_t prev = libbpf_set_print(silent);
	struct bpf_link *l = bpf_program__attach_uprobe_opts(prog, pid, path, offset, opts);
	int err = errno;

	libbpf_set_print(prev);
	errno = err;
	return l;
}

struct bpf_link *uprobe__attach(struct bpf_program *prog, pid_t pid, const char *path,
				size_t offset, const struct bpf_uprobe_opts *opts, const char *what)
{
	LIBBPF_OPTS(bpf_uprobe_opts, o);
	struct bpf_link *l;
	uint64_t old = 0;
	struct stat st;
	int err, kerr, kfd, found;

	l = bpf_program__attach_uprobe_opts(prog, pid, path, offset, opts);
	if (l)
		return l;
	err = -errno;
	if (err != -EINVAL || stat(path, &st))
		goto fail;
	/* Only what the kernel logs from here on: register once more to have the line logged. */
	kfd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	kerr = errno;
	if (kfd >= 0)
		lseek(kfd, 0, SEEK_END);
	l = attach_quiet(prog, pid, path, offset, opts);
	if (l || kfd < 0) {
		if (kfd >= 0)
			close(kfd);
		if (l)
			return l;
		fprintf(
		    stderr,
		    "spanprof: warning: %s: the kernel refused the uprobe (EINVAL); if another "
		    "tool probes that instruction with a reference counter (a USDT semaphore), "
		    "the kernel log names it (\"ref_ctr_offset mismatch\"), but it could not be "
		    "read (/dev/kmsg: %s)\n",
		    what, strerror(kerr));
		goto fail;
	}
	found = kmsg_find(kfd, (uint64_t)st.st_ino, offset ? offset : UINT64_MAX, &old);
	close(kfd);
	if (!found || old == opts->ref_ctr_offset)
		goto fail;
	memcpy(&o, opts, opts->sz < sizeof(o) ? opts->sz : sizeof(o));
	o.sz = sizeof(o);
	o.ref_ctr_offset = old;
	l = attach_quiet(prog, pid, path, offset, &o);
	fprintf(stderr,
		"spanprof: warning: %s: another tool's uprobe on the same instruction has %s "
		"(kernel: ref_ctr_offset mismatch, 0x%" PRIx64 " against 0x%zx): %s\n",
		what, old ? "a reference counter (a USDT semaphore)" : "no reference counter", old,
		opts->ref_ctr_offset,
		l ? "attached again with that tool's counter"
		  : "attaching again with it failed too");
	if (l)
		return l;
	err = -errno;
fail:
	errno = -err;
	return NULL;
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Every CO-RE relocation of the BPF object resolves against the BTF of each supported kernel
 * (docs/kernels.md), checked without booting it: `bpftool -d gen min_core_btf BTF OUT OBJ` runs
 * libbpf's relocation logic (bpf_core_calc_relo_insn) against a saved kernel BTF and reports each
 * relocation as "relo #N: matching candidate" or "relo #N: no matching targets found".
 * Only what is guarded may find nothing (optional() below): kernel-difference flavours
 * (TYPE___suffix, bpf/core_fixes.bpf.h) and fields the program tests with
 * bpf_core_field_exists() before use.
 * The kernels: the saved BTFs of test/sampling/fixtures/kernels/ (decompressed by
 * test/sampling/core_btf.mk) and the build host's /sys/kernel/btf/vmlinux.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#ifndef BPF_OBJ
#error "BPF_OBJ: the path of sampler.bpf.o"
#endif
#ifndef KERNEL_BTF_DIR
#error "KERNEL_BTF_DIR: where test/sampling/core_btf.mk decompressed the saved kernel BTFs"
#endif

struct relo_result {
	int relocs, matched, optional_unmatched;
	char unmatched[4096]; /* the local specs that found nothing and must have */
};

/* One relocation as bpftool reported it. */
struct relo {
	char prog[64], kind[32], spec[256]; /* spec: "[558] struct inode.i_mtime_sec" */
	int matched;
};

/*
 * A relocation may find nothing in a kernel when it tests for existence (field_exists,
 * type_exists: the probe itself), when its type is a flavour (TYPE___suffix), or when the same
 * program tests a field of the same type for existence (the access is guarded: fields that came
 * together, like inode.i_mtime_sec and i_mtime_nsec, are tested once).
 */
static int optional(const struct relo *all, int n, const struct relo *x)
{
	size_t type_len = strcspn(x->spec, "."); /* "[558] struct inode" */

	if (strstr(x->kind, "exists") || strstr(x->spec, "___"))
		return 1;
	for (int i = 0; i < n; i++)
		if (strstr(all[i].kind, "exists") && !strcmp(all[i].prog, x->prog) &&
		    !strncmp(all[i].spec, x->spec, type_len) && all[i].spec[type_len] == '.')
			return 1;
	return 0;
}

/* Runs bpftool on @btf; fills @r from its debug output. Returns bpftool's exit status. */
static int check_btf(const char *btf, struct relo_result *r)
{
	char cmd[1024], line[1024];
	char out[] = "/tmp/spanprof-test-core-btf-XXXXXX";
	struct relo *all = NULL, *cur = NULL;
	int fd, rc, n = 0, cap = 0;
	FILE *p;

	memset(r, 0, sizeof(*r));
	fd = mkstemp(out);
	assert_true(fd >= 0);
	close(fd);
	snprintf(cmd, sizeof(cmd), "bpftool -d gen min_core_btf '%s' '%s' '%s' 2>&1", btf, out,
		 BPF_OBJ);
	p = popen(cmd, "r");
	assert_non_null(p);
	/* libbpf: prog 'P': relo #N: <kind> [id] struct T.field (access @ offset O) */
	while (fgets(line, sizeof(line), p)) {
		const char *prog = strstr(line, "prog '"), *relo = strstr(line, ": relo #");
		const char *rest = relo ? strchr(relo + 8, ':') : NULL;
		const char *end;

		if (!prog || !rest)
			continue;
		rest += 2;
		if (rest[0] == '<') {
			if (n == cap) {
				cap = cap ? 2 * cap : 256;
				all = realloc(all, cap * sizeof(*all));
				assert_non_null(all);
			}
			cur = &all[n++];
			memset(cur, 0, sizeof(*cur));
			end = strchr(prog + 6, '\'');
			snprintf(cur->prog, sizeof(cur->prog), "%.*s", (int)(end - prog - 6),
				 prog + 6);
			end = strchr(rest, '>');
			snprintf(cur->kind, sizeof(cur->kind), "%.*s", (int)(end - rest - 1),
				 rest + 1);
			rest = end + 2;
			end = strstr(rest, " (");
			snprintf(cur->spec, sizeof(cur->spec), "%.*s",
				 (int)(end ? end - rest : (long)strlen(rest)), rest);
		} else if (cur && !strncmp(rest, "matching candidate", 18)) {
			cur->matched = 1;
		}
	}
	rc = pclose(p);
	unlink(out);
	for (int i = 0; i < n; i++) {
		char one[300];

		r->relocs++;
		if (all[i].matched) {
			r->matched++;
		} else if (optional(all, n, &all[i])) {
			r->optional_unmatched++;
		} else {
			snprintf(one, sizeof(one), "%s: <%s> %s\n", all[i].prog, all[i].kind,
				 all[i].spec);
			if (strlen(r->unmatched) + strlen(one) < sizeof(r->unmatched))
				strcat(r->unmatched, one);
		}
	}
	free(all);
	return rc;
}

static void check_kernel(const char *btf)
{
	struct relo_result r;
	int rc;

	if (access(btf, R_OK)) {
		print_message("no BTF at %s\n", btf);
		fail();
	}
	rc = check_btf(btf, &r);
	print_message("%s: %d relocations, %d matched, %d guarded ones not there\n", btf, r.relocs,
		      r.matched, r.optional_unmatched);
	if (r.unmatched[0])
		print_message("relocations without a target in %s:\n%s", btf, r.unmatched);
	assert_int_equal(rc, 0);
	assert_true(r.relocs > 50); /* the object has ~500: the output was parsed */
	assert_string_equal(r.unmatched, "");
	assert_int_equal(r.matched + r.optional_unmatched, r.relocs);
}

static void debian12_6_1(void **state)
{
	check_kernel(KERNEL_BTF_DIR "/6.1.0-57-amd64.btf");
}

static void debian12_6_12(void **state)
{
	check_kernel(KERNEL_BTF_DIR "/6.12.117+deb12-amd64.btf");
}

static void build_host(void **state)
{
	if (access("/sys/kernel/btf/vmlinux", R_OK))
		skip(); /* a kernel without BTF: nothing to check against */
	check_kernel("/sys/kernel/btf/vmlinux");
}

/* The parse sees a relocation find nothing: 6.1's sched_process_exit has no group_dead. */
static void absent_flavour_seen_on_6_1(void **state)
{
	struct relo_result r;

	assert_int_equal(check_btf(KERNEL_BTF_DIR "/6.1.0-57-amd64.btf", &r), 0);
	assert_true(r.optional_unmatched >= 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(debian12_6_1),
	    cmocka_unit_test(debian12_6_12),
	    cmocka_unit_test(build_host),
	    cmocka_unit_test(absent_flavour_seen_on_6_1),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

// SPDX-License-Identifier: Apache-2.0
/*
 * Unit tests of exporter/process/k8smeta.c (the kubelet's log layout: /var/log/pods and
 * /var/log/containers names, the name cache over a fixture host root) and of the syntax checks
 * of the targeting flags (exporter/sampling/targets.c). No root needed.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "process/k8smeta.h"
#include "sampling/targets.h"

#define UID "1a2b3c4d-5e6f-7a8b-9c0d-1e2f3a4b5c6d"
#define UID2 "99999999-8888-7777-6666-555555555555"
#define CID "3f4b6c1d2e9a8b7c6d5e4f30211203a4b5c6d7e8f9a0b1c2d3e4f5a6b7c8d9e0"
#define CID2 "0000000000000000000000000000000000000000000000000000000000000abc"

static void test_pod_dir(void **state)
{
	struct k8s_pod_ref r;
	char big[400];

	assert_int_equal(k8smeta__parse_pod_dir("shop_checkout-7d9f5c-x2x9q_" UID, &r), 0);
	assert_string_equal(r.namespace, "shop");
	assert_string_equal(r.name, "checkout-7d9f5c-x2x9q");
	assert_string_equal(r.uid, UID);
	/* Pod names are DNS subdomains (dots allowed); upper-case uids are normalized. */
	assert_int_equal(k8smeta__parse_pod_dir(
			     "kube-system_etcd.node-1_1A2B3C4D-5E6F-7A8B-9C0D-1E2F3A4B5C6D", &r),
			 0);
	assert_string_equal(r.name, "etcd.node-1");
	assert_string_equal(r.uid, UID);

	static const char *const bad[] = {
	    "",
	    "shop",
	    "shop_checkout",
	    "shop_checkout_",
	    "_checkout_" UID,
	    "shop__" UID,
	    "shop_check_out_" UID,    /* a fourth part */
	    "Shop_checkout_" UID,     /* upper case name */
	    "sh.op_checkout_" UID,    /* a namespace is a label: no dots */
	    "shop_-checkout_" UID,    /* must start with a letter or digit */
	    "shop_checkout-_" UID,    /* ...and end with one */
	    "shop_checkout_" UID "0", /* uid too long */
	    "shop_checkout_1a2b3c4d_5e6f_7a8b_9c0d_1e2f3a4b5c6d", /* '_' in the uid */
	    "shop_checkout_1a2b3c4d-5e6f-7a8b-9c0d-1e2f3a4b5c6g", /* not hex */
	    "shop_check/out_" UID,
	    "shop_check\nout_" UID,
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (k8smeta__parse_pod_dir(bad[i], &r) != -EINVAL)
			fail_msg("accepted '%s'", bad[i]);

	/* Length limits: a 63-character namespace and a 253-character pod name are the most. */
	memset(big, 'a', sizeof(big));
	snprintf(big, sizeof(big), "%.*s_x_" UID, 63,
		 "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
	assert_int_equal(k8smeta__parse_pod_dir(big, &r), 0);
	snprintf(big, sizeof(big), "%.*s_x_" UID, 64,
		 "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
	assert_int_equal(k8smeta__parse_pod_dir(big, &r), -EINVAL);
	{
		char name[260];

		memset(name, 'p', 253);
		name[253] = '\0';
		snprintf(big, sizeof(big), "ns_%s_" UID, name);
		assert_int_equal(k8smeta__parse_pod_dir(big, &r), 0);
		assert_int_equal(strlen(r.name), 253);
		name[253] = 'p';
		name[254] = '\0';
		snprintf(big, sizeof(big), "ns_%s_" UID, name);
		assert_int_equal(k8smeta__parse_pod_dir(big, &r), -EINVAL);
	}
}

static void test_container_log(void **state)
{
	struct k8s_container_ref r;

	assert_int_equal(
	    k8smeta__parse_container_log("checkout-7d9f5c-x2x9q_shop_app-server-" CID ".log", &r),
	    0);
	assert_string_equal(r.pod, "checkout-7d9f5c-x2x9q");
	assert_string_equal(r.namespace, "shop");
	assert_string_equal(r.container, "app-server");
	assert_string_equal(r.id, CID);

	static const char *const bad[] = {
	    "",
	    ".log",
	    "-" CID ".log",
	    "pod_ns_ctr-" CID,	       /* no .log */
	    "pod_ns_ctr-" CID ".gz",   /* rotated or something else */
	    "pod_ns_ctr" CID ".log",   /* no '-' before the id */
	    "pod_ns_ctr-" CID "0.log", /* 65 digits: the '-' is not where the id starts */
	    "pod_ns_-" CID ".log",     /* empty container */
	    "pod_ns-" CID ".log",      /* two parts */
	    "pod_n_s_ctr-" CID ".log", /* four parts */
	    "pod_n.s_ctr-" CID ".log", /* namespace with a dot */
	    "pod_ns_c.tr-" CID ".log", /* container with a dot */
	    "pod_ns_ctr-3f4b6c1d2e9a8b7c6d5e4f30211203a4b5c6d7e8f9a0b1c2d3e4f5a6b7c8d9eZ.log",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (k8smeta__parse_container_log(bad[i], &r) != -EINVAL)
			fail_msg("accepted '%s'", bad[i]);
}

/* --- a fixture host root --- */

static char root[64];

static void mkdirs(const char *rel)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	for (char *c = path + strlen(root) + 1; *c; c++) {
		if (*c != '/')
			continue;
		*c = '\0';
		mkdir(path, 0755);
		*c = '/';
	}
	assert_true(mkdir(path, 0755) == 0 || errno == EEXIST);
}

static void touch(const char *rel)
{
	char path[PATH_MAX];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	fd = open(path, O_WRONLY | O_CREAT, 0644);
	assert_true(fd >= 0);
	close(fd);
}

/* Setup and teardown: the teardown runs even when the test fails. */
static int make_root(void **state)
{
	snprintf(root, sizeof(root), "/tmp/k8smeta-test-XXXXXX");
	return mkdtemp(root) ? 0 : -1;
}

static int rm_root(void **state)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	return system(cmd);
}

static int count_pod(void *ctx, const struct k8s_pod_ref *pod)
{
	(*(int *)ctx)++;
	return strcmp(pod->uid, UID2) == 0 ? 7 : 0;
}

static void test_fill_from_fixture_tree(void **state)
{
	struct k8smeta *k;
	struct k8smeta_stats st;
	struct procmeta m = {0};
	uint64_t skipped = 0;
	int n = 0;

	k = k8smeta__new(root);
	assert_non_null(k);

	/* No kubelet directories at all: a pod uid alone still gives k8s.pod.uid. */
	assert_int_equal(k8smeta__scan_pods(root, count_pod, &n, NULL), -ENOENT);
	strcpy(m.pod_uid, UID);
	assert_int_equal(k8smeta__fill(k, &m), 0);
	assert_non_null(m.k8s);
	assert_null(m.k8s->pod_name);
	procmeta__clear(&m);

	mkdirs("var/log/pods/shop_checkout-7d9f_" UID "/app");
	mkdirs("var/log/pods/default_solo_" UID2);
	mkdirs("var/log/pods/not a pod");
	mkdirs("var/log/containers");
	touch("var/log/containers/checkout-7d9f_shop_app-" CID ".log");
	touch("var/log/containers/garbage.log");

	assert_int_equal(k8smeta__scan_pods(root, count_pod, &n, &skipped), 7);
	assert_true(n >= 1 && n <= 2);
	assert_true(skipped <= 1); /* "not a pod", if read before the stop */

	/* A container: all three names from /var/log/containers. */
	strcpy(m.pod_uid, UID);
	strcpy(m.container_id, CID);
	sleep(1); /* past the rescan rate limit, so the new files are seen */
	assert_int_equal(k8smeta__fill(k, &m), 0);
	assert_non_null(m.k8s);
	assert_string_equal(m.k8s->pod_name, "checkout-7d9f");
	assert_string_equal(m.k8s->namespace, "shop");
	assert_string_equal(m.k8s->container_name, "app");
	procmeta__clear(&m);

	/* A process of the pod outside any container entry: pod names by uid, no container. */
	strcpy(m.pod_uid, UID2);
	assert_int_equal(k8smeta__fill(k, &m), 0);
	assert_string_equal(m.k8s->pod_name, "solo");
	assert_string_equal(m.k8s->namespace, "default");
	assert_null(m.k8s->container_name);
	procmeta__clear(&m);

	/* A container of a known pod without its own log entry: the pod's names only. */
	strcpy(m.pod_uid, UID);
	strcpy(m.container_id, CID2);
	assert_int_equal(k8smeta__fill(k, &m), 0);
	assert_string_equal(m.k8s->pod_name, "checkout-7d9f");
	assert_null(m.k8s->container_name);
	procmeta__clear(&m);

	/* A docker container outside Kubernetes, and a host process: nothing. */
	strcpy(m.container_id, CID2);
	assert_int_equal(k8smeta__fill(k, &m), 0);
	assert_null(m.k8s);
	procmeta__clear(&m);
	assert_int_equal(k8smeta__fill(k, &m), 0);
	assert_null(m.k8s);

	k8smeta__stats(k, &st);
	assert_int_equal(st.pods, 2);
	assert_int_equal(st.containers, 1);
	assert_int_equal(st.hits, 2);
	assert_int_equal(st.misses, 2);
	assert_true(st.skipped >= 2); /* "not a pod", garbage.log */
	/* Misses re-read the directories at most once a second. */
	assert_true(st.scans >= 2 && st.scans <= 4);

	k8smeta__free(k);
	k8smeta__free(NULL);
}

static void test_target_syntax(void **state)
{
	assert_int_equal(targets__check_container_id(CID), 0);
	assert_int_equal(targets__check_container_id("3F4B6C1D2E9A"), 0);
	assert_int_equal(targets__check_container_id("3f4b6c1d2e9"), -EINVAL); /* 11 digits */
	assert_int_equal(targets__check_container_id(CID "0"), -EINVAL);
	assert_int_equal(targets__check_container_id("3f4b6c1d2e9g"), -EINVAL);
	assert_int_equal(targets__check_container_id(""), -EINVAL);

	assert_int_equal(targets__check_pod(UID), 0);
	assert_int_equal(targets__check_pod("shop/checkout-7d9f"), 0);
	assert_int_equal(targets__check_pod("kube-system/etcd.node-1"), 0);
	assert_int_equal(targets__check_pod("shop"), -EINVAL);
	assert_int_equal(targets__check_pod("shop/"), -EINVAL);
	assert_int_equal(targets__check_pod("/checkout"), -EINVAL);
	assert_int_equal(targets__check_pod("a/b/c"), -EINVAL);
	assert_int_equal(targets__check_pod("Shop/checkout"), -EINVAL);
	assert_int_equal(targets__check_pod("shop/check_out"), -EINVAL);
	assert_int_equal(targets__check_pod("1a2b3c4d_5e6f_7a8b_9c0d_1e2f3a4b5c6d"), -EINVAL);
}

static void test_targets_need_cgroup2(void **state)
{
	const char *cg[] = {"system.slice"};
	const char *exe[] = {"/bin/sh"};
	struct targets_opts o = {.cgroups = cg, .ncgroups = 1};
	struct targets *t;

	/* A host root without cgroup v2: cgroup filters are refused, --exe is fine. */
	o.host_root = root;
	t = targets__new(&o);
	assert_null(t);
	assert_int_equal(errno, ENOENT);
	o = (struct targets_opts){.host_root = root, .exes = exe, .nexes = 1};
	t = targets__new(&o);
	assert_non_null(t);
	assert_int_equal(targets__exe_max(t), TARGETS_EXE_KEYS);
	assert_int_equal(targets__cgroup_max(t), 0);
	targets__free(t);
	targets__free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_pod_dir),
	    cmocka_unit_test(test_container_log),
	    cmocka_unit_test_setup_teardown(test_fill_from_fixture_tree, make_root, rm_root),
	    cmocka_unit_test(test_target_syntax),
	    cmocka_unit_test_setup_teardown(test_targets_need_cgroup2, make_root, rm_root),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

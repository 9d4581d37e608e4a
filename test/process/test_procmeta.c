// SPDX-License-Identifier: Apache-2.0
/*
 * Unit tests of exporter/process/procmeta.c: environ and OTEL_RESOURCE_ATTRIBUTES parsing, cgroup
 * container ids, and reading real and fixture /proc trees. Needs no root (a root run drops
 * to nobody in a child for the permission test).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "process/procmeta.h"

#define ID "3f4b6c1d2e9a8b7c6d5e4f30211203a4b5c6d7e8f9a0b1c2d3e4f5a6b7c8d9e0"

static void parse_env(const char *buf, size_t len, struct procmeta *m)
{
	memset(m, 0, sizeof(*m));
	assert_int_equal(procmeta__parse_environ(buf, len, m), 0);
}

static void test_environ_service_name(void **state)
{
	static const char env[] = "PATH=/bin\0AWS_SECRET_ACCESS_KEY=hunter2\0"
				  "OTEL_SERVICE_NAME=checkout\0HOME=/root";
	struct procmeta m;

	parse_env(env, sizeof(env) - 1, &m);
	assert_string_equal(m.service_name, "checkout");
	assert_string_equal(m.env_service_name, "checkout");
	assert_int_equal(m.nattrs, 0);
	assert_null(m.exe_path);
	assert_string_equal(m.container_id, "");
	procmeta__clear(&m);
	assert_null(m.service_name);
	procmeta__clear(NULL);
}

static void test_environ_resource_attributes(void **state)
{
	static const char env[] =
	    "X=1\0OTEL_RESOURCE_ATTRIBUTES= service.name = cart%20svc ,"
	    "deployment.environment.name=prod,k8s.pod.name=a%2Cb%3Dc,empty=\0";
	struct procmeta m;

	parse_env(env, sizeof(env) - 1, &m);
	assert_int_equal(m.nattrs, 4);
	assert_string_equal(m.attrs[0].key, "service.name");
	assert_string_equal(m.attrs[0].value, "cart svc");
	assert_string_equal(procmeta__attr(&m, "deployment.environment.name"), "prod");
	assert_string_equal(procmeta__attr(&m, "k8s.pod.name"), "a,b=c");
	assert_string_equal(procmeta__attr(&m, "empty"), "");
	assert_null(procmeta__attr(&m, "X"));
	/* No OTEL_SERVICE_NAME: service.name from the attributes. */
	assert_string_equal(m.service_name, "cart svc");
	procmeta__clear(&m);
}

static void test_environ_precedence(void **state)
{
	/* OTEL_SERVICE_NAME beats service.name; the first of two equal variables wins. */
	static const char env[] = "OTEL_RESOURCE_ATTRIBUTES=service.name=fromattr\0"
				  "OTEL_SERVICE_NAME=fromenv\0OTEL_SERVICE_NAME=second\0"
				  "OTEL_RESOURCE_ATTRIBUTES=service.name=second";
	struct procmeta m;

	parse_env(env, sizeof(env) - 1, &m);
	assert_string_equal(m.service_name, "fromenv");
	assert_string_equal(procmeta__attr(&m, "service.name"), "fromattr");
	procmeta__clear(&m);
}

static void test_environ_fallback(void **state)
{
	static const char env[] = "OTEL_SERVICE_NAME=\0OTEL_SERVICE_NAMEX=no\0";
	struct procmeta m;

	parse_env(env, sizeof(env) - 1, &m);
	assert_string_equal(m.service_name, "unknown_service");
	m.exe_name = strdup("nginx");
	assert_int_equal(procmeta__finish(&m), 0);
	assert_string_equal(m.service_name, "unknown_service:nginx");
	procmeta__clear(&m);
}

static void test_environ_garbage_and_truncation(void **state)
{
	static const char garbage[] = "\xff\xfe\0\0\0=\0OTEL_SERVICE_NAME\0OTEL_RESOURCE_ATTRIB\0"
				      "\x01\x02OTEL_SERVICE_NAME=x\0";
	/* Cut in the middle of the value, no final NUL (what a read at a cap gives). */
	static const char cut[] = "A=b\0OTEL_SERVICE_NAME=paym";
	struct procmeta m;

	parse_env(garbage, sizeof(garbage) - 1, &m);
	assert_string_equal(m.service_name, "unknown_service");
	assert_null(m.env_service_name);
	procmeta__clear(&m);

	parse_env(cut, sizeof(cut) - 1, &m);
	assert_string_equal(m.service_name, "paym");
	procmeta__clear(&m);

	/* Every prefix of a valid environ parses without error. */
	static const char full[] = "OTEL_RESOURCE_ATTRIBUTES=a=%41,b=c\0OTEL_SERVICE_NAME=s\0";
	for (size_t n = 0; n <= sizeof(full) - 1; n++) {
		parse_env(full, n, &m);
		assert_non_null(m.service_name);
		procmeta__clear(&m);
	}
	parse_env(NULL, 0, &m);
	assert_string_equal(m.service_name, "unknown_service");
	procmeta__clear(&m);
}

static void assert_attrs_rejected(const char *s)
{
	struct procmeta m = {0};

	assert_int_equal(procmeta__parse_resource_attributes("k=v", 3, &m), 0);
	assert_int_equal(m.nattrs, 1);
	assert_int_equal(procmeta__parse_resource_attributes(s, strlen(s), &m), -EINVAL);
	/* The whole variable is discarded, including what was there before. */
	assert_int_equal(m.nattrs, 1);
	assert_string_equal(m.attrs[0].key, "k");
	procmeta__clear(&m);
}

static void test_resource_attributes_malformed(void **state)
{
	assert_attrs_rejected("a=b,noequals");
	assert_attrs_rejected("=v");
	assert_attrs_rejected(" = v");
	assert_attrs_rejected("a=%zz");
	assert_attrs_rejected("a=%4");
	assert_attrs_rejected("a=50%");
	assert_attrs_rejected("a=%00");
}

static void test_resource_attributes_edges(void **state)
{
	struct procmeta m = {0};
	char big[4096];
	size_t n = 0;

	/* Empty members are skipped; a later duplicate key overrides. */
	assert_int_equal(
	    procmeta__parse_resource_attributes(",a=1,, b=2 ,a=3,", strlen(",a=1,, b=2 ,a=3,"), &m),
	    0);
	assert_int_equal(m.nattrs, 2);
	assert_string_equal(procmeta__attr(&m, "a"), "3");
	assert_string_equal(procmeta__attr(&m, "b"), "2");
	/* '+' is not a space (not form encoding); values may hold '='. */
	assert_int_equal(procmeta__parse_resource_attributes("x=a+b=c", 7, &m), 0);
	assert_string_equal(procmeta__attr(&m, "x"), "a+b=c");
	assert_null(procmeta__attr(&m, "a"));
	/* The length bounds the input: no NUL needed. */
	assert_int_equal(procmeta__parse_resource_attributes("y=12345", 4, &m), 0);
	assert_string_equal(procmeta__attr(&m, "y"), "12");
	/* At most PROCMETA_MAX_ATTRS entries are kept. */
	for (int i = 0; i < 2 * PROCMETA_MAX_ATTRS; i++)
		n += snprintf(big + n, sizeof(big) - n, "k%d=v%d,", i, i);
	assert_int_equal(procmeta__parse_resource_attributes(big, n, &m), 0);
	assert_int_equal(m.nattrs, PROCMETA_MAX_ATTRS);
	assert_string_equal(procmeta__attr(&m, "k0"), "v0");
	assert_null(procmeta__attr(&m, "k40"));
	procmeta__clear(&m);
}

static int cgroup_str(const char *s, char *id)
{
	FILE *f = fmemopen((void *)s, strlen(s), "r");
	int err;

	assert_non_null(f);
	err = procmeta__parse_cgroup(f, id);
	fclose(f);
	return err;
}

static void test_cgroup_paths(void **state)
{
	static const char *const found[] = {
	    "12:pids:/docker/" ID "\n",
	    "0::/system.slice/docker-" ID ".scope\n",
	    "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-podX.slice/"
	    "cri-containerd-" ID ".scope\n",
	    "0::/kubepods/besteffort/pod1234-5678/" ID "\n",
	    "0::/machine.slice/libpod-" ID ".scope/container\n",
	    "0::/kubepods.slice/crio-" ID ".scope", /* no final newline */
	    "garbage line\n\n::\n1:cpu\n0::/user.slice\n4:memory:/docker/" ID "\n",
	    "0::/docker/" ID "/nested/" ID "\n",
	    /* The systemd cgroup driver's "<slice>:<runtime>:<id>" form (containerd, cri-o). */
	    "5:name=systemd:/system.slice/containerd.service/kubepods-besteffort-pod1.slice:"
	    "cri-containerd:" ID "\n",
	    "0::/kubepods-burstable-pod1.slice:crio:" ID "\n",
	    /* kind and other kubelets running in a systemd unit of their own. */
	    "0::/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-besteffort.slice/"
	    "kubelet-kubepods-besteffort-pod1.slice/cri-containerd-" ID ".scope\n",
	    /* A v1 hierarchy names the container; the v2 line does not. */
	    "0::/init.scope\n3:cpu,cpuacct:/docker/" ID "\n",
	};
	char id[PROCMETA_CONTAINER_ID_LEN + 1];

	for (size_t i = 0; i < sizeof(found) / sizeof(found[0]); i++) {
		memset(id, 'x', sizeof(id));
		assert_int_equal(cgroup_str(found[i], id), 0);
		assert_string_equal(id, ID);
	}
	/* A colon form with an unknown runtime, or a colon inside the id, is not an id. */
	assert_int_equal(cgroup_str("0::/x.slice:unknown:" ID "\n", id), -ENOENT);
	assert_int_equal(cgroup_str("0::/docker-:" ID "\n", id), -ENOENT);
	assert_int_equal(cgroup_str("0::/:docker:\n", id), -ENOENT);

	/* Upper-case hex is normalized. */
	assert_int_equal(cgroup_str("0::/docker/3F4B6C1D2E9A8B7C6D5E4F30211203A4B5C6D7E8F9A0B1C2D3E"
				    "4F5A6B7C8D9E0\n",
				    id),
			 0);
	assert_string_equal(id, ID);
}

static void test_cgroup_not_found(void **state)
{
	char id[PROCMETA_CONTAINER_ID_LEN + 1] = "";

	assert_int_equal(cgroup_str("", id), -ENOENT);
	assert_int_equal(cgroup_str("0::/\n", id), -ENOENT);
	assert_int_equal(cgroup_str("0::/user.slice/user-0.slice/session-3.scope\n", id), -ENOENT);
	/* 63 and 65 digits, non-hex, and an id outside the path field. */
	assert_int_equal(cgroup_str("0::/docker/" ID "0\n", id), -ENOENT);
	assert_int_equal(cgroup_str("0::/docker/abc\n", id), -ENOENT);
	assert_int_equal(cgroup_str("0::/docker/3f4b6c1d2e9a8b7c6d5e4f30211203a4b5c6d7e8f9a0b1c2d3e"
				    "4f5a6b7c8d9e\n",
				    id),
			 -ENOENT);
	assert_int_equal(cgroup_str("0::/docker/zf4b6c1d2e9a8b7c6d5e4f30211203a4b5c6d7e8f9a0b1c2d3e"
				    "4f5a6b7c8d9e0\n",
				    id),
			 -ENOENT);
	assert_int_equal(cgroup_str(ID "\n", id), -ENOENT);
	/* cri-o's conmon is the container's monitor, not the container. */
	assert_int_equal(cgroup_str("0::/kubepods.slice/crio-conmon-" ID ".scope\n", id), -ENOENT);
	/* Binary garbage. */
	assert_int_equal(cgroup_str("\x01\x02:\xff:\x80/docker/\n\x7f", id), -ENOENT);
	assert_string_equal(id, "");
}

#define UID "1a2b3c4d-5e6f-7a8b-9c0d-1e2f3a4b5c6d"

static int pod_uid_str(const char *s, char *uid)
{
	return procmeta__cgroup_path_pod_uid(s, strlen(s), uid);
}

static void test_cgroup_pod_uid(void **state)
{
	static const char *const found[] = {
	    /* systemd driver: '_' for '-' in slice names, every QoS class. */
	    "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod"
	    "1a2b3c4d_5e6f_7a8b_9c0d_1e2f3a4b5c6d.slice/cri-containerd-" ID ".scope",
	    "/kubepods.slice/kubepods-pod1a2b3c4d_5e6f_7a8b_9c0d_1e2f3a4b5c6d.slice/crio-" ID
	    ".scope",
	    "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod"
	    "1A2B3C4D_5E6F_7A8B_9C0D_1E2F3A4B5C6D.slice",
	    /* cgroupfs driver. */
	    "/kubepods/burstable/pod" UID "/" ID,
	    "/kubepods/pod" UID "/" ID,
	    /* kind: the kubelet runs in a unit of its own. */
	    "/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-besteffort.slice/"
	    "kubelet-kubepods-besteffort-pod1a2b3c4d_5e6f_7a8b_9c0d_1e2f3a4b5c6d.slice/"
	    "cri-containerd-" ID ".scope",
	    /* The systemd driver's colon form. */
	    "/system.slice/containerd.service/kubepods-besteffort-pod"
	    "1a2b3c4d_5e6f_7a8b_9c0d_1e2f3a4b5c6d.slice:cri-containerd:" ID,
	};
	static const char *const not_found[] = {
	    "",
	    "/",
	    "/user.slice/user-0.slice/session-3.scope",
	    "/docker/" ID,
	    /* No "kubepods" in the path: a pod-looking name elsewhere is not a pod. */
	    "/system.slice/pod" UID,
	    "/machine.slice/libpod-pod-" UID ".slice",
	    /* Wrong length, separators or digits. */
	    "/kubepods/pod1a2b3c4d-5e6f-7a8b-9c0d-1e2f3a4b5c6",
	    "/kubepods/pod" UID "0",
	    "/kubepods/pod1a2b3c4d-5e6f-7a8b-9c0d+1e2f3a4b5c6d",
	    "/kubepods/pod1a2b3c4dx5e6f-7a8b-9c0d-1e2f3a4b5c6d",
	    "/kubepods/podza2b3c4d-5e6f-7a8b-9c0d-1e2f3a4b5c6d",
	    "/kubepods.slice/kubepods-burstable.slice",
	    "/kubepods/besteffort",
	    /* "-pod<uid>" in a component that does not say kubepods. */
	    "/kubepods.slice/other-pod1a2b3c4d_5e6f_7a8b_9c0d_1e2f3a4b5c6d.slice",
	};
	char uid[PROCMETA_POD_UID_LEN + 1], id[PROCMETA_CONTAINER_ID_LEN + 1];
	FILE *f;

	for (size_t i = 0; i < sizeof(found) / sizeof(found[0]); i++) {
		memset(uid, 'x', sizeof(uid));
		if (pod_uid_str(found[i], uid))
			fail_msg("no pod uid in %s", found[i]);
		assert_string_equal(uid, UID);
	}
	for (size_t i = 0; i < sizeof(not_found) / sizeof(not_found[0]); i++)
		if (pod_uid_str(not_found[i], uid) != -ENOENT)
			fail_msg("pod uid found in %s", not_found[i]);
	/* The path need not be NUL-terminated: only @len bytes are read. */
	assert_int_equal(procmeta__cgroup_path_pod_uid("/kubepods/pod" UID "/x", 13 + 35, uid),
			 -ENOENT);

	/* Both ids from a whole /proc/PID/cgroup file; the uid is "" when there is none. */
	{
		static const char file[] = "1:cpu:/\n0::/kubepods/burstable/pod" UID "/" ID "\n";

		f = fmemopen((void *)file, sizeof(file) - 1, "r");
		assert_non_null(f);
		assert_int_equal(procmeta__parse_cgroup_ids(f, id, uid), 0);
		assert_string_equal(id, ID);
		assert_string_equal(uid, UID);
		fclose(f);
	}
	{
		static const char file[] = "0::/system.slice/docker-" ID ".scope\n";

		f = fmemopen((void *)file, sizeof(file) - 1, "r");
		assert_non_null(f);
		memset(uid, 'x', sizeof(uid));
		assert_int_equal(procmeta__parse_cgroup_ids(f, id, uid), 0);
		assert_string_equal(uid, "");
		fclose(f);
	}
}

static void test_cgroup_fixtures(void **state)
{
	static const struct {
		const char *file;
		int err;
	} cases[] = {
	    {"cgroup-v1-docker.txt", 0},
	    {"cgroup-v2-k8s-containerd.txt", 0},
	    {"cgroup-v2-crio-conmon.txt", 0},
	    {"cgroup-host.txt", -ENOENT},
	};
	char path[PATH_MAX], id[PROCMETA_CONTAINER_ID_LEN + 1];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		FILE *f;

		snprintf(path, sizeof(path), "%s/%s", OTLP_FIXTURES, cases[i].file);
		f = fopen(path, "r");
		if (!f)
			fail_msg("fixture %s: %s", path, strerror(errno));
		id[0] = '\0';
		assert_int_equal(procmeta__parse_cgroup(f, id), cases[i].err);
		if (!cases[i].err)
			assert_string_equal(id, ID);
		fclose(f);
	}
}

static void write_file(const char *dir, const char *name, const void *data, size_t len)
{
	char path[PATH_MAX];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, data, len), (ssize_t)len);
	close(fd);
}

/* A fake /proc/4242 in a temporary directory; returns the root. */
static char *fake_proc(char *root, size_t size)
{
	static const char env[] = "SECRET=x\0OTEL_SERVICE_NAME=fake-svc\0"
				  "OTEL_RESOURCE_ATTRIBUTES=team=core";
	static const char cg[] = "0::/system.slice/docker-" ID ".scope\n";
	char dir[128], link[PATH_MAX];

	snprintf(root, size, "/tmp/procmeta-test-XXXXXX");
	assert_non_null(mkdtemp(root));
	assert_int_equal(chmod(root, 0755), 0);
	snprintf(dir, sizeof(dir), "%s/4242", root);
	assert_int_equal(mkdir(dir, 0755), 0);
	write_file(dir, "environ", env, sizeof(env) - 1);
	write_file(dir, "cgroup", cg, sizeof(cg) - 1);
	write_file(dir, "comm", "fakecomm\n", 9);
	snprintf(link, sizeof(link), "%s/exe", dir);
	assert_int_equal(symlink("/opt/app/bin/server (deleted)", link), 0);
	return root;
}

static void rm_fake_proc(const char *root)
{
	static const char *const names[] = {"environ", "cgroup", "comm", "exe"};
	char path[PATH_MAX];

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(path, sizeof(path), "%s/4242/%s", root, names[i]);
		unlink(path);
	}
	snprintf(path, sizeof(path), "%s/4242", root);
	rmdir(path);
	rmdir(root);
}

static void test_read_fixture_tree(void **state)
{
	char root[64];
	struct procmeta m = {0};

	fake_proc(root, sizeof(root));
	assert_int_equal(procmeta__read_at(root, 4242, &m), 0);
	assert_string_equal(m.service_name, "fake-svc");
	assert_string_equal(m.exe_path, "/opt/app/bin/server");
	assert_string_equal(m.exe_name, "server");
	assert_string_equal(m.container_id, ID);
	assert_string_equal(procmeta__attr(&m, "team"), "core");
	assert_int_equal(m.nattrs, 1);
	procmeta__clear(&m);

	/* Vanished or never there. */
	assert_int_equal(procmeta__read_at(root, 4243, &m), -ESRCH);
	assert_null(m.service_name);
	assert_int_equal(procmeta__read_at(root, -1, &m), -ESRCH);
	rm_fake_proc(root);
}

/* Runs procmeta__read_at() as an unprivileged user (in a child) on an unreadable tree. */
static void test_read_permission_denied(void **state)
{
	char root[64], path[PATH_MAX];
	static const char *const names[] = {"environ", "cgroup", "comm"};
	int status;
	pid_t pid;

	fake_proc(root, sizeof(root));
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(path, sizeof(path), "%s/4242/%s", root, names[i]);
		assert_int_equal(chmod(path, 0), 0);
	}
	/* exe stays a readable symlink: partial information is a success. */
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct procmeta m = {0};
		int err;

		if (geteuid() == 0 && (setgid(65534) || setuid(65534)))
			_exit(10);
		err = procmeta__read_at(root, 4242, &m);
		if (err || strcmp(m.exe_name, "server") || m.container_id[0] ||
		    strcmp(m.service_name, "unknown_service:server"))
			_exit(11);
		procmeta__clear(&m);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);

	/* Without the exe link nothing is readable. */
	snprintf(path, sizeof(path), "%s/4242/exe", root);
	assert_int_equal(unlink(path), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct procmeta m = {0};

		if (geteuid() == 0 && (setgid(65534) || setuid(65534)))
			_exit(10);
		_exit(procmeta__read_at(root, 4242, &m) == -EACCES ? 0 : 12);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	rm_fake_proc(root);
}

static void test_read_self(void **state)
{
	struct procmeta m = {0};
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	assert_true(n > 0);
	exe[n] = '\0';
	assert_int_equal(procmeta__read(getpid(), &m), 0);
	assert_string_equal(m.exe_path, exe);
	assert_string_equal(m.exe_name, strrchr(exe, '/') + 1);
	assert_non_null(m.service_name);
	procmeta__clear(&m);
}

/* A real process with a chosen environment, then the same pid once it is gone. */
static void test_read_child_process(void **state)
{
	char *const argv[] = {"sleep", "30", NULL};
	char *const envp[] = {"PATH=/usr/bin:/bin", "DB_PASSWORD=secret",
			      "OTEL_RESOURCE_ATTRIBUTES=service.name=ignored,service.version=1.2",
			      "OTEL_SERVICE_NAME=child-svc", NULL};
	struct procmeta m = {0};
	char path[64], exe[PATH_MAX];
	int status, err = -1;
	pid_t pid;

	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		execve("/bin/sleep", argv, envp);
		_exit(127);
	}
	/*
	 * Wait for the exec to finish: /proc/PID/exe switches to the new file before the
	 * kernel sets the new environment's bounds, so wait for both.
	 */
	for (int i = 0; i < 500; i++) {
		char env[256] = "";
		ssize_t n;
		FILE *f;

		snprintf(path, sizeof(path), "/proc/%d/exe", pid);
		n = readlink(path, exe, sizeof(exe) - 1);
		exe[n > 0 ? n : 0] = '\0';
		snprintf(path, sizeof(path), "/proc/%d/environ", pid);
		f = fopen(path, "r");
		n = f ? (ssize_t)fread(env, 1, sizeof(env), f) : 0;
		if (f)
			fclose(f);
		if (strstr(exe, "sleep") && n > 0)
			break;
		usleep(10000);
	}
	err = procmeta__read(pid, &m);
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	assert_int_equal(err, 0);
	assert_string_equal(m.service_name, "child-svc");
	assert_string_equal(m.exe_name, "sleep");
	assert_non_null(strstr(m.exe_path, "/sleep"));
	assert_string_equal(procmeta__attr(&m, "service.version"), "1.2");
	assert_int_equal(m.nattrs, 2);
	procmeta__clear(&m);

	/* Reaped: the pid is gone (unless reused within microseconds). */
	assert_int_equal(procmeta__read(pid, &m), -ESRCH);
}

/* Starts @path with @argv (in @cwd when not NULL) and waits until the exec is done. */
static pid_t spawn_exec(const char *path, char *const argv[], const char *cwd)
{
	char link[64], exe[PATH_MAX];
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		if (cwd && chdir(cwd))
			_exit(126);
		execv(path, argv);
		_exit(127);
	}
	snprintf(link, sizeof(link), "/proc/%d/exe", pid);
	for (int i = 0; i < 500; i++) {
		ssize_t n = readlink(link, exe, sizeof(exe) - 1);

		exe[n > 0 ? n : 0] = '\0';
		if (strstr(exe, "realprog"))
			return pid;
		usleep(10000);
	}
	fail_msg("pid %d never ran %s", pid, path);
	return -1;
}

static void reap(pid_t pid)
{
	int status;

	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
}

/* The exe_path and exe_name procmeta__read() gives a process started as @path, @argv. */
static void check_exec(const char *path, char *const argv[], const char *cwd, const char *want_path,
		       const char *want_name)
{
	struct procmeta m = {0};
	pid_t pid = spawn_exec(path, argv, cwd);
	int err = procmeta__read(pid, &m);

	reap(pid);
	assert_int_equal(err, 0);
	assert_string_equal(m.exe_path, want_path);
	assert_string_equal(m.exe_name, want_name);
	assert_non_null(strstr(m.service_name, want_name));
	procmeta__clear(&m);
}

/*
 * A program started through a symlink (Debian's redis-server -> redis-check-rdb) is named
 * as it was started: by argv[0], by its first word when the title is rewritten, by comm in
 * the file's directory when argv[0] says nothing, relative to the working directory too.
 * Never a name that is not the very same file.
 */
static void test_read_symlinked_executable(void **state)
{
	char dir[] = "/tmp/procmeta-exe-XXXXXX", real[PATH_MAX], link[PATH_MAX], cmd[PATH_MAX + 64];
	char link_title[PATH_MAX + 32];

	assert_non_null(mkdtemp(dir));
	snprintf(real, sizeof(real), "%s/realprog", dir);
	snprintf(link, sizeof(link), "%s/linkprog", dir);
	snprintf(cmd, sizeof(cmd), "cp /bin/sleep '%s'", real);
	assert_int_equal(system(cmd), 0);
	assert_int_equal(symlink("realprog", link), 0);
	snprintf(link_title, sizeof(link_title), "%s *:6379", link);

	check_exec(link, (char *const[]){link, "30", NULL}, NULL, link, "linkprog");
	/* setproctitle-style argv[0]: its first word. */
	check_exec(link, (char *const[]){link_title, "30", NULL}, NULL, link, "linkprog");
	/* argv[0] of no use: comm names the link in the file's directory. */
	check_exec(link, (char *const[]){"my worker", "30", NULL}, NULL, link, "linkprog");
	/* Relative to the working directory. */
	check_exec(link, (char *const[]){"./linkprog", "30", NULL}, dir, link, "linkprog");
	/* Started by the file's own name: argv[0] claiming another name changes nothing. */
	check_exec(real, (char *const[]){link, "30", NULL}, NULL, real, "realprog");

	/* The link now names another file: not this process's name any more. */
	{
		struct procmeta m = {0};
		pid_t pid = spawn_exec(link, (char *const[]){link, "30", NULL}, NULL);
		int err;

		assert_int_equal(unlink(link), 0);
		assert_int_equal(symlink("/bin/true", link), 0);
		err = procmeta__read(pid, &m);
		reap(pid);
		assert_int_equal(err, 0);
		assert_string_equal(m.exe_path, real);
		assert_string_equal(m.exe_name, "realprog");
		procmeta__clear(&m);
	}
	unlink(link);
	unlink(real);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_environ_service_name),
	    cmocka_unit_test(test_environ_resource_attributes),
	    cmocka_unit_test(test_environ_precedence),
	    cmocka_unit_test(test_environ_fallback),
	    cmocka_unit_test(test_environ_garbage_and_truncation),
	    cmocka_unit_test(test_resource_attributes_malformed),
	    cmocka_unit_test(test_resource_attributes_edges),
	    cmocka_unit_test(test_cgroup_paths),
	    cmocka_unit_test(test_cgroup_not_found),
	    cmocka_unit_test(test_cgroup_pod_uid),
	    cmocka_unit_test(test_cgroup_fixtures),
	    cmocka_unit_test(test_read_fixture_tree),
	    cmocka_unit_test(test_read_permission_denied),
	    cmocka_unit_test(test_read_self),
	    cmocka_unit_test(test_read_child_process),
	    cmocka_unit_test(test_read_symlinked_executable),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

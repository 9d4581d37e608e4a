// SPDX-License-Identifier: Apache-2.0
/*
 * Fuzz target: what exporter/process/procmeta.c reads from /proc: the environ block
 * (procmeta__parse_environ(), with OTEL_RESOURCE_ATTRIBUTES inside), a bare
 * OTEL_RESOURCE_ATTRIBUTES value, and /proc/PID/cgroup (procmeta__parse_cgroup() from a memory
 * stream, and each line's path through procmeta__cgroup_path_id() and
 * procmeta__cgroup_path_pod_uid()). The same bytes feed all of them. A service name must always
 * come out, attributes must be live strings with unique keys, a container id must be 64
 * lower-case hex digits and a pod uid 8-4-4-4-12 lower-case hex digits. Each line is also a
 * kubelet log directory or file name (exporter/process/k8smeta.c): the names that come out must be
 * non-empty DNS names without '_'.
 */
#include <string.h>

#include "fuzz.h"
#include "process/k8smeta.h"
#include "process/procmeta.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	return 0;
}

static void check_meta(const struct procmeta *m)
{
	uint32_t i, j;

	FUZZ_CHECK(m->service_name && strlen(m->service_name) > 0);
	FUZZ_CHECK(m->nattrs <= PROCMETA_MAX_ATTRS && (!m->nattrs || m->attrs));
	for (i = 0; i < m->nattrs; i++) {
		FUZZ_CHECK(m->attrs[i].key && m->attrs[i].value && strlen(m->attrs[i].key) > 0);
		FUZZ_CHECK(strlen(m->attrs[i].value) < SIZE_MAX);
		for (j = 0; j < i; j++)
			FUZZ_CHECK(strcmp(m->attrs[i].key, m->attrs[j].key) != 0);
		FUZZ_CHECK(procmeta__attr(m, m->attrs[i].key) == m->attrs[i].value);
	}
}

static void check_id(int err, const char *id)
{
	FUZZ_CHECK(err == 0 || err == -ENOENT || err == -EIO);
	if (!err)
		FUZZ_CHECK(strlen(id) == PROCMETA_CONTAINER_ID_LEN &&
			   strspn(id, "0123456789abcdef") == PROCMETA_CONTAINER_ID_LEN);
}

static void check_uid(int err, const char *uid)
{
	FUZZ_CHECK(err == 0 || err == -ENOENT);
	if (err)
		return;
	FUZZ_CHECK(strlen(uid) == PROCMETA_POD_UID_LEN);
	for (size_t i = 0; i < PROCMETA_POD_UID_LEN; i++)
		FUZZ_CHECK((i == 8 || i == 13 || i == 18 || i == 23)
			       ? uid[i] == '-'
			       : strchr("0123456789abcdef", uid[i]) && uid[i]);
}

static void check_name(const char *s, size_t max)
{
	size_t n = strlen(s);

	FUZZ_CHECK(n > 0 && n <= max);
	FUZZ_CHECK(strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789-.") == n);
}

/* One line as a /var/log/pods directory name and as a /var/log/containers file name. */
static void check_k8s_names(const char *line, size_t len)
{
	char name[512];
	struct k8s_pod_ref pod;
	struct k8s_container_ref ctr;

	if (len >= sizeof(name))
		return;
	memcpy(name, line, len);
	name[len] = '\0';
	if (k8smeta__parse_pod_dir(name, &pod) == 0) {
		check_name(pod.namespace, K8S_LABEL_MAX);
		check_name(pod.name, K8S_POD_NAME_MAX);
		check_uid(0, pod.uid);
	}
	if (k8smeta__parse_container_log(name, &ctr) == 0) {
		check_name(ctr.pod, K8S_POD_NAME_MAX);
		check_name(ctr.namespace, K8S_LABEL_MAX);
		check_name(ctr.container, K8S_LABEL_MAX);
		check_id(0, ctr.id);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char id[PROCMETA_CONTAINER_ID_LEN + 1], uid[PROCMETA_POD_UID_LEN + 1];
	/* A copy of exactly @size bytes: ASan then catches a read past the block. */
	char *buf = malloc(size ? size : 1);
	const char *p, *end, *nl;
	struct procmeta m = {0};
	FILE *f;
	int err;

	if (!buf)
		return 0;
	memcpy(buf, data, size);

	err = procmeta__parse_environ(buf, size, &m);
	FUZZ_CHECK(err == 0 || err == -ENOMEM);
	if (!err) {
		check_meta(&m);
		/* With an executable name, as procmeta__read() finishes it. */
		m.exe_name = strdup("fuzz");
		if (m.exe_name && !procmeta__finish(&m))
			check_meta(&m);
	}
	procmeta__clear(&m);

	err = procmeta__parse_resource_attributes(buf, size, &m);
	FUZZ_CHECK(err == 0 || err == -EINVAL || err == -ENOMEM);
	if (err)
		FUZZ_CHECK(m.nattrs == 0);
	if (!err && !procmeta__finish(&m))
		check_meta(&m);
	procmeta__clear(&m);

	f = fmemopen(size ? buf : (char *)"", size ? size : 1, "r");
	if (f) {
		memset(id, 'x', sizeof(id));
		check_id(procmeta__parse_cgroup_ids(f, id, uid), id);
		if (uid[0])
			check_uid(0, uid);
		fclose(f);
	}
	/* Each line's path, after "id:controllers:". */
	for (p = buf, end = buf + size; p < end; p = nl + 1) {
		const char *path;

		nl = memchr(p, '\n', (size_t)(end - p));
		if (!nl)
			nl = end;
		check_k8s_names(p, (size_t)(nl - p));
		path = memchr(p, ':', (size_t)(nl - p));
		path = path ? memchr(path + 1, ':', (size_t)(nl - path - 1)) : NULL;
		if (!path)
			continue;
		check_id(procmeta__cgroup_path_id(path + 1, (size_t)(nl - path - 1), id), id);
		check_uid(procmeta__cgroup_path_pod_uid(path + 1, (size_t)(nl - path - 1), uid),
			  uid);
	}
	free(buf);
	return 0;
}

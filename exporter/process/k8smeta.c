// SPDX-License-Identifier: Apache-2.0
/*
 * k8smeta: Kubernetes names from the kubelet's log layout (see k8smeta.h for what and why).
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <uthash.h>

#include "process/k8smeta.h"
#include "util/util.h"

#define RESCAN_NS 1000000000ull /* at most one re-read of the directories per second */

struct pod_entry {
	struct k8s_pod_ref ref; /* key: ref.uid */
	UT_hash_handle hh;
};

struct container_entry {
	struct k8s_container_ref ref; /* key: ref.id */
	UT_hash_handle hh;
};

struct k8smeta {
	char *root; /* "" for "/" */
	struct pod_entry *pods;
	struct container_entry *containers;
	uint64_t last_scan_ns; /* CLOCK_MONOTONIC; 0: never */
	struct k8smeta_stats st;
};

static bool is_alnum_lower(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

/* RFC 1123 label (@dots 0) or subdomain (@dots 1) of @n characters, at most @max. */
static bool is_dns_name(const char *s, size_t n, size_t max, bool dots)
{
	if (n == 0 || n > max || !is_alnum_lower(s[0]) || !is_alnum_lower(s[n - 1]))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!is_alnum_lower(s[i]) && s[i] != '-' && !(dots && s[i] == '.'))
			return false;
	return true;
}

static char lower(char c)
{
	return c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c;
}

/* Splits [s, s + n) at its two '_' into three non-empty parts; false if not exactly two. */
static bool split3(const char *s, size_t n, const char *part[3], size_t len[3])
{
	const char *u1 = memchr(s, '_', n), *u2;

	if (!u1)
		return false;
	u2 = memchr(u1 + 1, '_', s + n - u1 - 1);
	if (!u2 || memchr(u2 + 1, '_', s + n - u2 - 1))
		return false;
	part[0] = s;
	len[0] = u1 - s;
	part[1] = u1 + 1;
	len[1] = u2 - u1 - 1;
	part[2] = u2 + 1;
	len[2] = s + n - u2 - 1;
	return true;
}

int k8smeta__parse_pod_dir(const char *name, struct k8s_pod_ref *out)
{
	const char *part[3];
	size_t len[3];

	if (!split3(name, strlen(name), part, len))
		return -EINVAL;
	if (!is_dns_name(part[0], len[0], K8S_LABEL_MAX, false) ||
	    !is_dns_name(part[1], len[1], K8S_POD_NAME_MAX, true) || len[2] != PROCMETA_POD_UID_LEN)
		return -EINVAL;
	for (size_t i = 0; i < PROCMETA_POD_UID_LEN; i++) {
		bool dash = i == 8 || i == 13 || i == 18 || i == 23;

		if (dash ? part[2][i] != '-' : util__hexval(part[2][i]) < 0)
			return -EINVAL;
		out->uid[i] = lower(part[2][i]);
	}
	out->uid[PROCMETA_POD_UID_LEN] = '\0';
	memcpy(out->namespace, part[0], len[0]);
	out->namespace[len[0]] = '\0';
	memcpy(out->name, part[1], len[1]);
	out->name[len[1]] = '\0';
	return 0;
}

int k8smeta__parse_container_log(const char *name, struct k8s_container_ref *out)
{
	/* "-" + id + ".log" */
	const size_t tail = 1 + PROCMETA_CONTAINER_ID_LEN + 4;
	size_t n = strlen(name);
	const char *id, *part[3];
	size_t len[3];

	if (n <= tail || strcmp(name + n - 4, ".log") || name[n - tail] != '-')
		return -EINVAL;
	id = name + n - tail + 1;
	for (size_t i = 0; i < PROCMETA_CONTAINER_ID_LEN; i++) {
		if (util__hexval(id[i]) < 0)
			return -EINVAL;
		out->id[i] = lower(id[i]);
	}
	out->id[PROCMETA_CONTAINER_ID_LEN] = '\0';
	if (!split3(name, n - tail, part, len) ||
	    !is_dns_name(part[0], len[0], K8S_POD_NAME_MAX, true) ||
	    !is_dns_name(part[1], len[1], K8S_LABEL_MAX, false) ||
	    !is_dns_name(part[2], len[2], K8S_LABEL_MAX, false))
		return -EINVAL;
	memcpy(out->pod, part[0], len[0]);
	out->pod[len[0]] = '\0';
	memcpy(out->namespace, part[1], len[1]);
	out->namespace[len[1]] = '\0';
	memcpy(out->container, part[2], len[2]);
	out->container[len[2]] = '\0';
	return 0;
}

static DIR *open_under(const char *root, const char *dir)
{
	char path[PATH_MAX];

	if (snprintf(path, sizeof(path), "%s%s", root ? root : "", dir) >= (int)sizeof(path)) {
		errno = ENAMETOOLONG;
		return NULL;
	}
	return opendir(path);
}

int k8smeta__scan_pods(const char *host_root, int (*cb)(void *ctx, const struct k8s_pod_ref *pod),
		       void *ctx, uint64_t *skipped)
{
	DIR *d = open_under(host_root, "/var/log/pods");
	struct k8s_pod_ref ref;
	struct dirent *de;
	int rc = 0;

	if (!d)
		return -errno;
	while (!rc && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		if (k8smeta__parse_pod_dir(de->d_name, &ref)) {
			if (skipped)
				(*skipped)++;
			continue;
		}
		rc = cb(ctx, &ref);
	}
	closedir(d);
	return rc;
}

static void tables_free(struct k8smeta *k)
{
	struct pod_entry *p, *pt;
	struct container_entry *c, *ct;

	HASH_ITER (hh, k->pods, p, pt) {
		HASH_DEL(k->pods, p);
		free(p);
	}
	HASH_ITER (hh, k->containers, c, ct) {
		HASH_DEL(k->containers, c);
		free(c);
	}
}

static int add_pod(void *ctx, const struct k8s_pod_ref *pod)
{
	struct k8smeta *k = ctx;
	struct pod_entry *e;

	if (HASH_COUNT(k->pods) >= K8SMETA_MAX_ENTRIES)
		return 1; /* bounded: the rest stays unnamed */
	HASH_FIND(hh, k->pods, pod->uid, PROCMETA_POD_UID_LEN, e);
	if (e)
		return 0;
	e = malloc(sizeof(*e));
	if (!e)
		return -ENOMEM;
	e->ref = *pod;
	HASH_ADD(hh, k->pods, ref.uid, PROCMETA_POD_UID_LEN, e);
	return 0;
}

static int scan_containers(struct k8smeta *k)
{
	DIR *d = open_under(k->root, "/var/log/containers");
	struct container_entry *e;
	struct k8s_container_ref ref;
	struct dirent *de;
	int err = 0;

	if (!d)
		return -errno;
	while ((de = readdir(d)) && HASH_COUNT(k->containers) < K8SMETA_MAX_ENTRIES) {
		if (de->d_name[0] == '.')
			continue;
		if (k8smeta__parse_container_log(de->d_name, &ref)) {
			k->st.skipped++;
			continue;
		}
		HASH_FIND(hh, k->containers, ref.id, PROCMETA_CONTAINER_ID_LEN, e);
		if (e)
			continue;
		e = malloc(sizeof(*e));
		if (!e) {
			err = -ENOMEM;
			break;
		}
		e->ref = ref;
		HASH_ADD(hh, k->containers, ref.id, PROCMETA_CONTAINER_ID_LEN, e);
	}
	closedir(d);
	return err;
}

/* Reads both directories again into fresh tables. A missing directory leaves its table empty. */
static int rescan(struct k8smeta *k)
{
	int err;

	tables_free(k);
	k->last_scan_ns = util__mono_ns();
	k->st.scans++;
	err = k8smeta__scan_pods(k->root, add_pod, k, &k->st.skipped);
	if (err == -ENOMEM)
		return err;
	err = scan_containers(k);
	return err == -ENOMEM ? err : 0;
}

struct k8smeta *k8smeta__new(const char *host_root)
{
	struct k8smeta *k = calloc(1, sizeof(*k));

	if (!k)
		return NULL;
	k->root = strdup(host_root && strcmp(host_root, "/") ? host_root : "");
	if (!k->root) {
		free(k);
		return NULL;
	}
	return k;
}

void k8smeta__free(struct k8smeta *k)
{
	if (!k)
		return;
	tables_free(k);
	free(k->root);
	free(k);
}

/* Looks the process up; true when something named it. */
static bool lookup(struct k8smeta *k, const struct procmeta *m, const struct k8s_container_ref **c,
		   const struct k8s_pod_ref **p)
{
	struct container_entry *ce = NULL;
	struct pod_entry *pe = NULL;

	if (m->container_id[0])
		HASH_FIND(hh, k->containers, m->container_id, PROCMETA_CONTAINER_ID_LEN, ce);
	if (m->pod_uid[0])
		HASH_FIND(hh, k->pods, m->pod_uid, PROCMETA_POD_UID_LEN, pe);
	*c = ce ? &ce->ref : NULL;
	*p = pe ? &pe->ref : NULL;
	/* A container of the pod needs its own entry; a process of the pod itself does not. */
	return ce || (pe && !m->container_id[0]);
}

static int set(char **dst, const char *src)
{
	if (!src || !*src)
		return 0;
	*dst = strdup(src);
	return *dst ? 0 : -ENOMEM;
}

int k8smeta__fill(struct k8smeta *k, struct procmeta *m)
{
	const struct k8s_container_ref *c;
	const struct k8s_pod_ref *p;
	struct procmeta_k8s *out;
	bool found;
	int err;

	if (m->k8s || (!m->pod_uid[0] && !m->container_id[0]))
		return 0;
	found = lookup(k, m, &c, &p);
	if (!found && (!k->last_scan_ns || util__mono_ns() - k->last_scan_ns >= RESCAN_NS)) {
		err = rescan(k);
		if (err)
			return err;
		found = lookup(k, m, &c, &p);
	}
	/* A container outside Kubernetes (docker, podman): nothing to say. */
	if (!found && !p && !m->pod_uid[0])
		return 0;
	out = calloc(1, sizeof(*out));
	if (!out)
		return -ENOMEM;
	if (c)
		err = set(&out->pod_name, c->pod) ?: set(&out->namespace, c->namespace)
						     ?: set(&out->container_name, c->container);
	else if (p)
		err = set(&out->pod_name, p->name) ?: set(&out->namespace, p->namespace);
	else
		err = 0;
	if (err) {
		free(out->pod_name);
		free(out->namespace);
		free(out->container_name);
		free(out);
		return err;
	}
	m->k8s = out;
	if (found)
		k->st.hits++;
	else
		k->st.misses++;
	return 0;
}

void k8smeta__stats(const struct k8smeta *k, struct k8smeta_stats *out)
{
	*out = k->st;
	out->pods = HASH_COUNT(k->pods);
	out->containers = HASH_COUNT(k->containers);
}

// SPDX-License-Identifier: Apache-2.0
/*
 * procmeta: resource facts of a process from /proc (see procmeta.h for what and why).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "process/procmeta.h"
#include "util/util.h"

/* environ can be large (ARG_MAX is 2 MiB and up); OTEL_* variables sit anywhere in it. */
#define ENVIRON_MAX (4u << 20)
#define ENV_SERVICE_NAME "OTEL_SERVICE_NAME="
#define ENV_RESOURCE_ATTRS "OTEL_RESOURCE_ATTRIBUTES="
#define UNKNOWN_SERVICE "unknown_service"

static void attrs_free(struct procmeta *m)
{
	for (uint32_t i = 0; i < m->nattrs; i++) {
		free(m->attrs[i].key);
		free(m->attrs[i].value);
	}
	free(m->attrs);
	m->attrs = NULL;
	m->nattrs = 0;
}

void procmeta__clear(struct procmeta *m)
{
	if (!m)
		return;
	attrs_free(m);
	free(m->service_name);
	free(m->exe_path);
	free(m->exe_name);
	free(m->env_service_name);
	if (m->k8s) {
		free(m->k8s->pod_name);
		free(m->k8s->namespace);
		free(m->k8s->container_name);
		free(m->k8s);
	}
	memset(m, 0, sizeof(*m));
}

const char *procmeta__attr(const struct procmeta *m, const char *key)
{
	for (uint32_t i = 0; i < m->nattrs; i++)
		if (strcmp(m->attrs[i].key, key) == 0)
			return m->attrs[i].value;
	return NULL;
}

static bool is_ows(char c)
{
	return c == ' ' || c == '\t';
}

/* Trims [*b, *e) of optional white space. */
static void trim(const char **b, const char **e)
{
	while (*b < *e && is_ows(**b))
		(*b)++;
	while (*e > *b && is_ows((*e)[-1]))
		(*e)--;
}

/* Percent-decodes [b, e) into a new string; NULL + errno (EINVAL: bad escape or NUL). */
static char *pct_decode(const char *b, const char *e)
{
	char *out = malloc(e - b + 1), *o = out;

	if (!out)
		return NULL;
	while (b < e) {
		if (*b != '%') {
			*o++ = *b++;
			continue;
		}
		if (e - b < 3 || util__hexval(b[1]) < 0 || util__hexval(b[2]) < 0 ||
		    (util__hexval(b[1]) | util__hexval(b[2])) == 0) {
			free(out);
			errno = EINVAL;
			return NULL;
		}
		*o++ = (char)(util__hexval(b[1]) << 4 | util__hexval(b[2]));
		b += 3;
	}
	*o = '\0';
	return out;
}

int procmeta__parse_resource_attributes(const char *s, size_t len, struct procmeta *out)
{
	struct procmeta tmp = {0};
	const char *p = s, *end = s + len;
	char *key = NULL, *value = NULL;
	int err = 0;

	tmp.attrs = calloc(PROCMETA_MAX_ATTRS, sizeof(*tmp.attrs));
	if (!tmp.attrs) {
		err = -ENOMEM;
		goto cleanup;
	}
	while (p < end) {
		const char *comma = memchr(p, ',', end - p);
		const char *me = comma ? comma : end, *eq, *kb = p, *ke, *vb, *ve;
		uint32_t i;

		p = comma ? comma + 1 : end;
		trim(&kb, &me);
		if (kb == me)
			continue; /* empty list member, e.g. a trailing comma */
		eq = memchr(kb, '=', me - kb);
		if (!eq) {
			err = -EINVAL;
			goto cleanup;
		}
		ke = eq;
		vb = eq + 1;
		ve = me;
		trim(&kb, &ke);
		trim(&vb, &ve);
		if (kb == ke || memchr(kb, '\0', ke - kb)) {
			err = -EINVAL;
			goto cleanup;
		}
		key = strndup(kb, ke - kb);
		value = pct_decode(vb, ve);
		if (!key || !value) {
			err = errno == EINVAL ? -EINVAL : -ENOMEM;
			goto cleanup;
		}
		for (i = 0; i < tmp.nattrs; i++)
			if (strcmp(tmp.attrs[i].key, key) == 0)
				break;
		if (i < tmp.nattrs) {
			/* Later duplicates override earlier ones. */
			free(tmp.attrs[i].value);
			tmp.attrs[i].value = value;
			free(key);
		} else if (tmp.nattrs < PROCMETA_MAX_ATTRS) {
			tmp.attrs[tmp.nattrs].key = key;
			tmp.attrs[tmp.nattrs++].value = value;
		} else {
			free(key);
			free(value);
		}
		key = value = NULL;
	}
	attrs_free(out);
	out->attrs = tmp.attrs;
	out->nattrs = tmp.nattrs;
	tmp.attrs = NULL;
	tmp.nattrs = 0;
cleanup:
	free(key);
	free(value);
	attrs_free(&tmp);
	return err;
}

int procmeta__finish(struct procmeta *m)
{
	const char *attr = procmeta__attr(m, "service.name");
	char *name;

	if (m->env_service_name && *m->env_service_name)
		name = strdup(m->env_service_name);
	else if (attr && *attr)
		name = strdup(attr);
	else if (m->exe_name && *m->exe_name) {
		if (asprintf(&name, UNKNOWN_SERVICE ":%s", m->exe_name) < 0)
			name = NULL;
	} else
		name = strdup(UNKNOWN_SERVICE);
	if (!name)
		return -ENOMEM;
	free(m->service_name);
	m->service_name = name;
	return 0;
}

int procmeta__parse_environ(const char *buf, size_t len, struct procmeta *out)
{
	const char *p = buf, *end = buf + len;
	bool seen_name = false, seen_attrs = false;
	int err;

	while (p < end) {
		const char *nul = memchr(p, '\0', end - p);
		const char *e = nul ? nul : end;
		size_t n = e - p;

		if (!seen_name && n >= strlen(ENV_SERVICE_NAME) &&
		    memcmp(p, ENV_SERVICE_NAME, strlen(ENV_SERVICE_NAME)) == 0) {
			const char *v = p + strlen(ENV_SERVICE_NAME);

			seen_name = true;
			if (e > v) {
				free(out->env_service_name);
				out->env_service_name = strndup(v, e - v);
				if (!out->env_service_name)
					return -ENOMEM;
			}
		} else if (!seen_attrs && n >= strlen(ENV_RESOURCE_ATTRS) &&
			   memcmp(p, ENV_RESOURCE_ATTRS, strlen(ENV_RESOURCE_ATTRS)) == 0) {
			const char *v = p + strlen(ENV_RESOURCE_ATTRS);

			seen_attrs = true;
			err = procmeta__parse_resource_attributes(v, e - v, out);
			if (err == -ENOMEM)
				return err;
		}
		p = e + 1;
	}
	return procmeta__finish(out);
}

static bool is_hex64(const char *s, size_t n)
{
	if (n != PROCMETA_CONTAINER_ID_LEN)
		return false;
	for (size_t i = 0; i < n; i++)
		if (util__hexval(s[i]) < 0)
			return false;
	return true;
}

static bool has_prefix(const char *s, size_t n, const char *pfx)
{
	size_t k = strlen(pfx);

	return n >= k && memcmp(s, pfx, k) == 0;
}

/* Runtime names of the systemd cgroup driver's "<slice>:<runtime>:<id>" form. */
static bool colon_runtime(const char *s, size_t n)
{
	static const char *const names[] = {"cri-containerd", "docker", "crio", "containerd",
					    "libpod"};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (n == strlen(names[i]) && memcmp(s, names[i], n) == 0)
			return true;
	return false;
}

/*
 * The container id named by one path component [b, b + n), if any: "<id>", "<runtime>-<id>"
 * with an optional ".scope", or "<slice>:<runtime>:<id>".
 */
static bool component_container_id(const char *b, size_t n, char *id)
{
	/* Runtime prefixes of systemd scope units: docker-<id>.scope, cri-containerd-<id>.scope… */
	static const char *const prefixes[] = {"docker-", "cri-containerd-", "crio-", "libpod-",
					       "containerd-"};
	const char *c2 = n ? memrchr(b, ':', n) : NULL;

	if (c2) {
		const char *c1 = memrchr(b, ':', c2 - b);

		if (!c1 || !colon_runtime(c1 + 1, c2 - c1 - 1))
			return false;
		n -= c2 + 1 - b;
		b = c2 + 1;
	}
	if (n > 6 && memcmp(b + n - 6, ".scope", 6) == 0)
		n -= 6;
	/* conmon is cri-o's/podman's monitor, not the container. */
	if (has_prefix(b, n, "crio-conmon-") || has_prefix(b, n, "libpod-conmon-"))
		return false;
	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
		if (has_prefix(b, n, prefixes[i])) {
			b += strlen(prefixes[i]);
			n -= strlen(prefixes[i]);
			break;
		}
	}
	if (!is_hex64(b, n))
		return false;
	for (size_t i = 0; i < n; i++)
		id[i] = (b[i] >= 'A' && b[i] <= 'F') ? b[i] - 'A' + 'a' : b[i];
	id[n] = '\0';
	return true;
}

int procmeta__cgroup_path_id(const char *path, size_t len, char *id)
{
	const char *end = path + len;

	/* The deepest component that names a container wins (nested pods and slices). */
	while (end > path) {
		const char *b = end;
		size_t n;

		while (b > path && b[-1] != '/')
			b--;
		n = end - b;
		end = b > path ? b - 1 : path;
		if (component_container_id(b, n, id))
			return 0;
	}
	return -ENOENT;
}

/* 8-4-4-4-12 hex digits separated by '-' (cgroupfs) or '_' (systemd slice names). */
static bool is_pod_uid(const char *s, size_t n)
{
	if (n != PROCMETA_POD_UID_LEN)
		return false;
	for (size_t i = 0; i < n; i++) {
		if (i == 8 || i == 13 || i == 18 || i == 23) {
			if (s[i] != '-' && s[i] != '_')
				return false;
		} else if (util__hexval(s[i]) < 0) {
			return false;
		}
	}
	return true;
}

static bool contains(const char *s, size_t n, const char *needle)
{
	return memmem(s, n, needle, strlen(needle)) != NULL;
}

int procmeta__cgroup_path_pod_uid(const char *path, size_t len, char *uid)
{
	const char *end = path + len;

	if (!contains(path, len, "kubepods"))
		return -ENOENT;
	while (end > path) {
		const char *b = end, *colon, *u = NULL;
		size_t n;

		while (b > path && b[-1] != '/')
			b--;
		n = end - b;
		end = b > path ? b - 1 : path;
		/* "<pod slice>:<runtime>:<id>": the pod is the part before the first ':'. */
		colon = n ? memchr(b, ':', n) : NULL;
		if (colon)
			n = colon - b;
		if (n > 6 && memcmp(b + n - 6, ".slice", 6) == 0)
			n -= 6;
		if (n == 3 + PROCMETA_POD_UID_LEN && has_prefix(b, n, "pod"))
			u = b + 3; /* cgroupfs: kubepods/<qos>/pod<uid> */
		else if (n > 4 + PROCMETA_POD_UID_LEN && contains(b, n, "kubepods") &&
			 memcmp(b + n - PROCMETA_POD_UID_LEN - 4, "-pod", 4) == 0)
			u = b + n - PROCMETA_POD_UID_LEN; /* systemd: kubepods-<qos>-pod<uid> */
		if (u && is_pod_uid(u, PROCMETA_POD_UID_LEN)) {
			for (size_t i = 0; i < PROCMETA_POD_UID_LEN; i++)
				uid[i] = u[i] == '_'			? '-'
					 : (u[i] >= 'A' && u[i] <= 'F') ? u[i] - 'A' + 'a'
									: u[i];
			uid[PROCMETA_POD_UID_LEN] = '\0';
			return 0;
		}
	}
	return -ENOENT;
}

int procmeta__parse_cgroup_ids(FILE *f, char *id, char *pod_uid)
{
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	int err = -ENOENT;
	bool need_uid = pod_uid != NULL;

	if (pod_uid)
		pod_uid[0] = '\0';
	while ((n = getline(&line, &cap, f)) > 0) {
		/* "hierarchy-ID:controller-list:path"; the path itself may contain ':'. */
		char *c1 = memchr(line, ':', n), *c2;
		size_t plen;

		if (!c1)
			continue;
		c2 = memchr(c1 + 1, ':', n - (c1 + 1 - line));
		if (!c2)
			continue;
		if (line[n - 1] == '\n')
			n--;
		plen = line + n - (c2 + 1);
		if (err && procmeta__cgroup_path_id(c2 + 1, plen, id) == 0)
			err = 0;
		if (need_uid && procmeta__cgroup_path_pod_uid(c2 + 1, plen, pod_uid) == 0)
			need_uid = false;
		if (!err && !need_uid)
			break;
	}
	if (err && ferror(f))
		err = -EIO;
	free(line);
	return err;
}

int procmeta__parse_cgroup(FILE *f, char *id)
{
	return procmeta__parse_cgroup_ids(f, id, NULL);
}

/* Reads up to @cap bytes of @path into a new buffer. */
static int read_small_file(const char *path, size_t cap, char **out, size_t *len)
{
	char *buf = NULL, *nb;
	size_t n = 0, sz = 0;
	int fd, err = 0;

	*out = NULL;
	*len = 0;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	for (;;) {
		ssize_t r;

		if (n == sz) {
			if (sz >= cap)
				break;
			sz = sz ? sz * 2 : 4096;
			if (sz > cap)
				sz = cap;
			nb = realloc(buf, sz);
			if (!nb) {
				err = -ENOMEM;
				goto cleanup;
			}
			buf = nb;
		}
		r = read(fd, buf + n, sz - n);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
			goto cleanup;
		}
		if (r == 0)
			break;
		n += r;
	}
	*out = buf;
	*len = n;
	buf = NULL;
cleanup:
	free(buf);
	close(fd);
	return err;
}

static bool denied(int err)
{
	return err == -EACCES || err == -EPERM;
}

static bool vanished(int err)
{
	return err == -ENOENT || err == -ESRCH;
}

/* Longest comm the kernel keeps (TASK_COMM_LEN - 1): longer names are cut. */
#define COMM_MAX 15

/* True when @name could have given the kernel the comm @comm (its first COMM_MAX bytes). */
static bool comm_of(const char *name, const char *comm)
{
	size_t n = strlen(comm);

	return n && !strncmp(name, comm, n) && (n == COMM_MAX || !name[n]);
}

/*
 * A candidate for the path @pid was started by: @path as the process sees it (absolute, or
 * relative to its working directory), accepted when its base name gives @comm and it is, from
 * the process's root, the very file of /proc/PID/exe (@exe_st). Returns the absolute path (a
 * copy) or NULL.
 */
static char *try_exec_path(const char *proc_root, int pid, const char *path, const char *comm,
			   const struct stat *exe_st)
{
	const char *base = strrchr(path, '/');
	char abs[PATH_MAX], full[PATH_MAX + 64];
	struct stat st;
	ssize_t n;
	int len;

	if (!base || !comm_of(base + 1, comm))
		return NULL;
	while (path[0] == '.' && path[1] == '/')
		path += 2;
	if (path[0] == '/') {
		len = snprintf(abs, sizeof(abs), "%s", path);
	} else {
		snprintf(full, sizeof(full), "%s/%d/cwd", proc_root, pid);
		n = readlink(full, abs, sizeof(abs) - 1);
		if (n <= 0 || abs[0] != '/')
			return NULL;
		abs[n] = '\0';
		len = snprintf(abs + n, sizeof(abs) - (size_t)n, "/%s", path) + (int)n;
	}
	if (len < 0 || (size_t)len >= sizeof(abs))
		return NULL;
	len = snprintf(full, sizeof(full), "%s/%d/root%s", proc_root, pid, abs);
	if (len < 0 || (size_t)len >= sizeof(full) || stat(full, &st) ||
	    st.st_dev != exe_st->st_dev || st.st_ino != exe_st->st_ino)
		return NULL;
	return strdup(abs);
}

/*
 * The path the process was started by, when it is not the file's own (a symlink: Debian's
 * /usr/bin/redis-server -> redis-check-rdb). /proc/PID/exe names the file the link resolved
 * to; the name the process knows is in comm (the base name of the path given to execve(2),
 * cut to 15 bytes: proc(5)) and argv[0]. Candidates: argv[0], its first word (programs that
 * rewrite their title), and the base names of argv[0] and of comm in the file's directory;
 * one is used only if it names the very same file (device, inode). NULL when the file's own
 * name is the process's, or nothing proves another.
 */
static char *exec_path(const char *proc_root, int pid, const char *exe)
{
	char path[PATH_MAX], first[PATH_MAX], cand[2][PATH_MAX], comm[COMM_MAX + 2] = "";
	const char *base = strrchr(exe, '/'), *argv0 = "", *name;
	char *buf = NULL, *found = NULL;
	int dirlen, i;
	struct stat exe_st;
	size_t len;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%d/comm", proc_root, pid);
	f = fopen(path, "re");
	if (!f)
		return NULL;
	if (!fgets(comm, sizeof(comm), f))
		comm[0] = '\0';
	fclose(f);
	comm[strcspn(comm, "\n")] = '\0';
	if (!base || !comm[0] || comm_of(base + 1, comm))
		return NULL;
	snprintf(path, sizeof(path), "%s/%d/exe", proc_root, pid);
	if (stat(path, &exe_st))
		return NULL;
	snprintf(path, sizeof(path), "%s/%d/cmdline", proc_root, pid);
	if (!read_small_file(path, PATH_MAX, &buf, &len) && len) {
		buf[len - 1] = '\0';
		argv0 = buf;
	}
	if ((size_t)snprintf(first, sizeof(first), "%.*s", (int)strcspn(argv0, " \t"), argv0) >=
	    sizeof(first))
		first[0] = '\0';
	name = strrchr(first, '/') ? strrchr(first, '/') + 1 : first;
	dirlen = (int)(base - exe);
	/* Too long a path is no candidate. */
	if ((size_t)snprintf(cand[0], sizeof(cand[0]), "%.*s/%s", dirlen, exe, name) >=
	    sizeof(cand[0]))
		cand[0][0] = '\0';
	if ((size_t)snprintf(cand[1], sizeof(cand[1]), "%.*s/%s", dirlen, exe, comm) >=
	    sizeof(cand[1]))
		cand[1][0] = '\0';
	for (i = 0; i < 4 && !found; i++) {
		const char *c = i == 0 ? argv0 : i == 1 ? first : cand[i - 2];

		if (c[0] && (i != 1 || strcmp(first, argv0)))
			found = try_exec_path(proc_root, pid, c, comm, &exe_st);
	}
	free(buf);
	return found;
}

int procmeta__read_at(const char *proc_root, int pid, struct procmeta *out)
{
	char path[PATH_MAX], exe[PATH_MAX];
	char *buf = NULL;
	size_t len;
	struct stat st;
	FILE *f = NULL;
	ssize_t n;
	int err, nread = 0, ndenied = 0;
	const char *slash;

	snprintf(path, sizeof(path), "%s/%d", proc_root, pid);
	if (pid < 0 || stat(path, &st)) {
		err = -ESRCH;
		goto cleanup;
	}

	snprintf(path, sizeof(path), "%s/%d/environ", proc_root, pid);
	err = read_small_file(path, ENVIRON_MAX, &buf, &len);
	if (!err) {
		nread++;
		/* Cut at the cap: drop the partial last entry. */
		if (len == ENVIRON_MAX)
			while (len > 0 && buf[len - 1] != '\0')
				len--;
		err = procmeta__parse_environ(buf, len, out);
		if (err)
			goto cleanup;
	} else if (denied(err)) {
		ndenied++;
	} else if (err == -ENOMEM) {
		goto cleanup;
	}

	snprintf(path, sizeof(path), "%s/%d/exe", proc_root, pid);
	n = readlink(path, exe, sizeof(exe) - 1);
	if (n > 0) {
		static const char deleted[] = " (deleted)";
		size_t dl = sizeof(deleted) - 1;

		nread++;
		exe[n] = '\0';
		if ((size_t)n > dl && strcmp(exe + n - dl, deleted) == 0)
			exe[n - dl] = '\0';
		out->exe_path = exec_path(proc_root, pid, exe);
		if (!out->exe_path)
			out->exe_path = strdup(exe);
		slash = out->exe_path ? strrchr(out->exe_path, '/') : NULL;
		out->exe_name = strdup(slash ? slash + 1 : exe);
		if (!out->exe_path || !out->exe_name) {
			err = -ENOMEM;
			goto cleanup;
		}
	} else if (n < 0 && denied(-errno)) {
		ndenied++;
	}
	/* Kernel threads have no exe: comm is the name ps shows. */
	if (!out->exe_name) {
		free(buf);
		snprintf(path, sizeof(path), "%s/%d/comm", proc_root, pid);
		err = read_small_file(path, 64, &buf, &len);
		if (!err) {
			nread++;
			while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == '\0'))
				len--;
			if (len > 0 && !(out->exe_name = strndup(buf, len))) {
				err = -ENOMEM;
				goto cleanup;
			}
		} else if (denied(err)) {
			ndenied++;
		}
	}

	snprintf(path, sizeof(path), "%s/%d/cgroup", proc_root, pid);
	f = fopen(path, "re");
	if (f) {
		nread++;
		procmeta__parse_cgroup_ids(f, out->container_id, out->pod_uid);
	} else if (denied(-errno)) {
		ndenied++;
	}

	snprintf(path, sizeof(path), "%s/%d", proc_root, pid);
	if (stat(path, &st)) {
		err = -ESRCH;
		goto cleanup;
	}
	if (nread == 0) {
		err = ndenied ? -EACCES : -ESRCH;
		goto cleanup;
	}
	err = procmeta__finish(out);
cleanup:
	if (err) {
		if (vanished(err))
			err = -ESRCH;
		procmeta__clear(out);
	}
	if (f)
		fclose(f);
	free(buf);
	return err;
}

int procmeta__read(int pid, struct procmeta *out)
{
	return procmeta__read_at("/proc", pid, out);
}

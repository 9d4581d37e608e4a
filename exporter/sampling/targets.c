// SPDX-License-Identifier: Apache-2.0
/*
 * targets: targeting flags resolved into the BPF filter maps (see targets.h for what and why).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/magic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/inotify.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "process/k8smeta.h"
#include "process/procmeta.h"
#include "sampling/targets.h"
#include "util/util.h"

#define POD_UIDS_PER_NAME 4 /* pods of one name at once (a recreated pod's old directory) */

struct exe_target {
	char *path; /* under the host root */
	const char *arg;
	struct sp_exe_key keys[TARGETS_EXE_KEYS]; /* oldest first */
	uint32_t nkeys;
	bool found;
};

struct cgroup_target {
	char *path; /* resolved */
	char *hint; /* NULL, or the path under the mount an absolute @arg may have meant */
	const char *arg;
	bool found;
};

struct container_target {
	char id[PROCMETA_CONTAINER_ID_LEN + 1]; /* lower case, len digits */
	size_t len;
	bool found, ambiguous;
};

struct pod_target {
	const char *arg;
	bool by_name;
	char namespace[K8S_LABEL_MAX + 1], name[K8S_POD_NAME_MAX + 1];
	char uids[POD_UIDS_PER_NAME][PROCMETA_POD_UID_LEN + 1]; /* by uid: uids[0] */
	uint32_t nuids;
	bool found;
};

/* A directory of the cgroup tree that names a wanted container or pod. */
struct match {
	uint64_t cgroup_id;
	uint32_t target; /* index into containers or pods */
	bool pod;
	char cid[PROCMETA_CONTAINER_ID_LEN + 1];
};

struct idset {
	uint64_t *ids;
	size_t n, cap;
};

struct targets {
	char *root; /* host root, "" for / */
	char cgroup_root[PATH_MAX];
	bool have_cgroup2;
	struct exe_target *exes;
	size_t nexes;
	struct cgroup_target *cgroups;
	size_t ncgroups;
	struct container_target *containers;
	size_t ncontainers;
	struct pod_target *pods;
	size_t npods;
	struct sampler_filter_maps maps;
	struct idset installed; /* cgroup ids in the map, sorted */
	struct idset want;
	struct match *matches;
	size_t nmatches, cap_matches;
	uint64_t last_ns;
	/*
	 * Changes below the cgroup root (and in /var/log/pods): one inotify watch per directory,
	 * set up again by every walk, so that an unchanged tree is not walked again.
	 */
	int ifd;
	bool watch_failed; /* out of watches: walk at every refresh */
	uint64_t last_walk_ns;
	struct targets_stats st;
};

int targets__check_container_id(const char *id)
{
	size_t n = strlen(id);

	if (n < TARGETS_MIN_ID_PREFIX || n > PROCMETA_CONTAINER_ID_LEN)
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		if (util__hexval(id[i]) < 0)
			return -EINVAL;
	return 0;
}

static bool is_uid(const char *s)
{
	if (strlen(s) != PROCMETA_POD_UID_LEN)
		return false;
	for (size_t i = 0; i < PROCMETA_POD_UID_LEN; i++) {
		bool dash = i == 8 || i == 13 || i == 18 || i == 23;

		if (dash ? s[i] != '-' : util__hexval(s[i]) < 0)
			return false;
	}
	return true;
}

/* NAMESPACE/NAME into @p; false when it is not that. */
static bool split_pod_name(const char *s, struct pod_target *p)
{
	const char *slash = strchr(s, '/');
	char dir[K8S_LABEL_MAX + 1 + K8S_POD_NAME_MAX + 1 + PROCMETA_POD_UID_LEN + 1];
	struct k8s_pod_ref ref;

	/* Checked as the kubelet's directory name would be, with a dummy uid. */
	if (!slash || strchr(slash + 1, '/') || (size_t)(slash - s) > K8S_LABEL_MAX ||
	    strlen(slash + 1) > K8S_POD_NAME_MAX)
		return false;
	snprintf(dir, sizeof(dir), "%.*s_%s_00000000-0000-0000-0000-000000000000", (int)(slash - s),
		 s, slash + 1);
	if (k8smeta__parse_pod_dir(dir, &ref))
		return false;
	if (p) {
		strcpy(p->namespace, ref.namespace);
		strcpy(p->name, ref.name);
	}
	return true;
}

int targets__check_pod(const char *pod)
{
	return is_uid(pod) || split_pod_name(pod, NULL) ? 0 : -EINVAL;
}

/*
 * @path under the host root, into @out; as is when it already is under it, or under /proc (the
 * agent shares the host's PID namespace: /proc/PID/root/... reaches a container's files).
 */
static int host_path(const struct targets *t, const char *path, char *out, size_t size)
{
	size_t rl = strlen(t->root);

	if (rl && ((!strncmp(path, t->root, rl) && path[rl] == '/') || !strncmp(path, "/proc/", 6)))
		rl = 0;
	if (snprintf(out, size, "%.*s%s", (int)rl, t->root, path) >= (int)size)
		return -ENAMETOOLONG;
	return 0;
}

static bool is_cgroup2(const char *path)
{
	struct statfs sf;

	return statfs(path, &sf) == 0 && sf.f_type == CGROUP2_SUPER_MAGIC;
}

static void find_cgroup2(struct targets *t)
{
	static const char *const where[] = {"/sys/fs/cgroup", "/sys/fs/cgroup/unified"};

	for (size_t i = 0; i < sizeof(where) / sizeof(where[0]); i++) {
		snprintf(t->cgroup_root, sizeof(t->cgroup_root), "%s%s", t->root, where[i]);
		if (is_cgroup2(t->cgroup_root)) {
			t->have_cgroup2 = true;
			return;
		}
	}
	snprintf(t->cgroup_root, sizeof(t->cgroup_root), "%s/sys/fs/cgroup", t->root);
}

static int setup_cgroup(struct targets *t, struct cgroup_target *c, const char *arg)
{
	char path[PATH_MAX], under[PATH_MAX];
	int err;

	c->arg = arg;
	if (arg[0] == '/')
		err = host_path(t, arg, path, sizeof(path));
	else
		err =
		    snprintf(path, sizeof(path), "%s/%s", t->cgroup_root, arg) >= (int)sizeof(path)
			? -ENAMETOOLONG
			: 0;
	if (err) {
		fprintf(stderr, "spanprof: --cgroup %s: path too long\n", arg);
		return err;
	}
	/*
	 * "/system.slice/foo.service", as /proc/PID/cgroup prints it, is relative to the mount:
	 * taken so when it names no directory as given but one under the mount. Neither there:
	 * the warning at the start names the mount's path too.
	 */
	if (arg[0] == '/' && access(path, F_OK) &&
	    snprintf(under, sizeof(under), "%s%s", t->cgroup_root, arg) < (int)sizeof(under) &&
	    strncmp(path, t->cgroup_root, strlen(t->cgroup_root))) {
		if (is_cgroup2(under)) {
			fprintf(
			    stderr,
			    "spanprof: --cgroup %s: taken as %s (the path /proc/PID/cgroup shows "
			    "is relative to the cgroup v2 mount)\n",
			    arg, under);
			strcpy(path, under);
		} else {
			c->hint = strdup(under);
			if (!c->hint)
				return -ENOMEM;
		}
	}
	/* A directory that exists now must be a cgroup v2 one; a missing one may come later. */
	if (access(path, F_OK) == 0 && !is_cgroup2(path)) {
		fprintf(stderr,
			"spanprof: --cgroup %s: %s is not a cgroup v2 directory (BPF sees the "
			"unified hierarchy only; it is mounted at %s)\n",
			arg, path, t->cgroup_root);
		return -EINVAL;
	}
	c->path = strdup(path);
	return c->path ? 0 : -ENOMEM;
}

void targets__free(struct targets *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->nexes; i++)
		free(t->exes[i].path);
	for (size_t i = 0; i < t->ncgroups; i++) {
		free(t->cgroups[i].path);
		free(t->cgroups[i].hint);
	}
	free(t->exes);
	free(t->cgroups);
	free(t->containers);
	free(t->pods);
	free(t->installed.ids);
	free(t->want.ids);
	free(t->matches);
	free(t->root);
	if (t->ifd >= 0)
		close(t->ifd);
	free(t);
}

struct targets *targets__new(const struct targets_opts *o)
{
	struct targets *t = calloc(1, sizeof(*t));
	char path[PATH_MAX];
	int err = -ENOMEM;

	if (!t)
		return NULL;
	t->maps.exe_fd = t->maps.cgroup_fd = -1;
	t->ifd = -1;
	t->root = strdup(o->host_root && strcmp(o->host_root, "/") ? o->host_root : "");
	t->exes = calloc(o->nexes + 1, sizeof(*t->exes));
	t->cgroups = calloc(o->ncgroups + 1, sizeof(*t->cgroups));
	t->containers = calloc(o->ncontainer_ids + 1, sizeof(*t->containers));
	t->pods = calloc(o->npods + 1, sizeof(*t->pods));
	if (!t->root || !t->exes || !t->cgroups || !t->containers || !t->pods)
		goto cleanup;
	/* A trailing '/' of the root would double every separator. */
	for (size_t n = strlen(t->root); n && t->root[n - 1] == '/'; n--)
		t->root[n - 1] = '\0';
	find_cgroup2(t);
	if ((o->ncgroups || o->ncontainer_ids || o->npods) && !t->have_cgroup2) {
		fprintf(stderr,
			"spanprof: --cgroup, --container-id and --k8s-pod need cgroup v2, which is "
			"mounted neither at %s nor at %s/unified\n",
			t->cgroup_root, t->cgroup_root);
		err = -ENOENT;
		goto cleanup;
	}
	for (size_t i = 0; i < o->nexes; i++) {
		t->exes[i].arg = o->exes[i];
		if (host_path(t, o->exes[i], path, sizeof(path)) ||
		    !(t->exes[i].path = strdup(path))) {
			fprintf(stderr, "spanprof: --exe %s: path too long\n", o->exes[i]);
			err = -EINVAL;
			goto cleanup;
		}
		t->nexes++;
	}
	for (size_t i = 0; i < o->ncgroups; i++) {
		err = setup_cgroup(t, &t->cgroups[i], o->cgroups[i]);
		if (err)
			goto cleanup;
		t->ncgroups++;
	}
	for (size_t i = 0; i < o->ncontainer_ids; i++) {
		struct container_target *c = &t->containers[t->ncontainers++];

		if (targets__check_container_id(o->container_ids[i])) {
			fprintf(stderr,
				"spanprof: --container-id wants 12 to 64 hex digits, not '%s'\n",
				o->container_ids[i]);
			err = -EINVAL;
			goto cleanup;
		}
		c->len = strlen(o->container_ids[i]);
		for (size_t k = 0; k < c->len; k++)
			c->id[k] = o->container_ids[i][k] | 0x20; /* hex digits: lower case */
	}
	for (size_t i = 0; i < o->npods; i++) {
		struct pod_target *p = &t->pods[t->npods++];

		p->arg = o->pods[i];
		if (is_uid(o->pods[i])) {
			for (size_t k = 0; k < PROCMETA_POD_UID_LEN; k++)
				p->uids[0][k] = o->pods[i][k] == '-' ? '-' : o->pods[i][k] | 0x20;
			p->nuids = 1;
		} else if (split_pod_name(o->pods[i], p)) {
			p->by_name = true;
		} else {
			fprintf(stderr,
				"spanprof: --k8s-pod wants a pod uid or NAMESPACE/NAME, not '%s'\n",
				o->pods[i]);
			err = -EINVAL;
			goto cleanup;
		}
	}
	return t;

cleanup:
	targets__free(t);
	errno = -err;
	return NULL;
}

uint32_t targets__exe_max(const struct targets *t)
{
	return t->nexes * TARGETS_EXE_KEYS;
}

uint32_t targets__cgroup_max(const struct targets *t)
{
	if (!t->ncgroups && !t->ncontainers && !t->npods)
		return 0;
	return t->ncgroups + (t->ncontainers || t->npods ? TARGETS_CGROUP_IDS : 0);
}

/* --- executables --- */

static bool key_used_elsewhere(const struct targets *t, const struct exe_target *self,
			       const struct sp_exe_key *k)
{
	for (size_t i = 0; i < t->nexes; i++) {
		if (&t->exes[i] == self)
			continue;
		for (uint32_t j = 0; j < t->exes[i].nkeys; j++)
			if (!memcmp(&t->exes[i].keys[j], k, sizeof(*k)))
				return true;
	}
	return false;
}

static void refresh_exe(struct targets *t, struct exe_target *x)
{
	struct sp_exe_key key = {0};
	struct stat st;
	uint8_t one = 1;

	x->found = stat(x->path, &st) == 0;
	if (!x->found)
		return;
	/* The kernel's own encoding of the superblock's device (MAJOR << 20 | MINOR). */
	key.dev = (uint64_t)major(st.st_dev) << 20 | minor(st.st_dev);
	key.ino = st.st_ino;
	for (uint32_t i = 0; i < x->nkeys; i++)
		if (!memcmp(&x->keys[i], &key, sizeof(key)))
			return;
	if (x->nkeys == TARGETS_EXE_KEYS) {
		if (!key_used_elsewhere(t, x, &x->keys[0]))
			bpf_map_delete_elem(t->maps.exe_fd, &x->keys[0]);
		memmove(x->keys, x->keys + 1, sizeof(x->keys[0]) * (TARGETS_EXE_KEYS - 1));
		x->nkeys--;
	}
	if (bpf_map_update_elem(t->maps.exe_fd, &key, &one, BPF_ANY)) {
		t->st.map_errors++;
		return;
	}
	x->keys[x->nkeys++] = key;
}

/* --- cgroups --- */

static int idset_add(struct idset *s, uint64_t id)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 64;
		uint64_t *n = realloc(s->ids, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		s->ids = n;
		s->cap = cap;
	}
	s->ids[s->n++] = id;
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void idset_sort(struct idset *s)
{
	size_t out = 0;

	qsort(s->ids, s->n, sizeof(*s->ids), cmp_u64);
	for (size_t i = 0; i < s->n; i++)
		if (!out || s->ids[out - 1] != s->ids[i])
			s->ids[out++] = s->ids[i];
	s->n = out;
}

static bool idset_has(const struct idset *s, uint64_t id)
{
	return bsearch(&id, s->ids, s->n, sizeof(*s->ids), cmp_u64) != NULL;
}

static int add_match(struct targets *t, const struct match *m)
{
	if (t->nmatches == t->cap_matches) {
		size_t cap = t->cap_matches ? 2 * t->cap_matches : 16;
		struct match *n = realloc(t->matches, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		t->matches = n;
		t->cap_matches = cap;
	}
	t->matches[t->nmatches++] = *m;
	return 0;
}

#define WATCH_MASK (IN_CREATE | IN_DELETE | IN_MOVED_TO | IN_MOVED_FROM | IN_ONLYDIR)

/* Watches @path for entries coming and going; a failure means walking at every refresh. */
static void watch(struct targets *t, const char *path)
{
	if (t->ifd >= 0 && inotify_add_watch(t->ifd, path, WATCH_MASK) < 0)
		t->watch_failed = true;
}

/* Whether anything was created or removed since the last walk (drains the events). */
static bool tree_changed(struct targets *t)
{
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	bool changed = t->ifd < 0 || t->watch_failed;
	ssize_t n;

	while (t->ifd >= 0 && (n = read(t->ifd, buf, sizeof(buf))) != 0) {
		if (n < 0) {
			changed |= errno != EAGAIN;
			break;
		}
		changed = true; /* any event, IN_Q_OVERFLOW included */
	}
	return changed;
}

struct walk {
	struct targets *t;
	char path[PATH_MAX]; /* relative to the cgroup v2 root, "" for the root */
	size_t len;
	uint64_t dirs;
};

/* The directory @name (cgroup id @ino) just entered; @parent_uid: a pod named above it. */
static void check_dir(struct walk *w, const char *name, uint64_t ino, const char *parent_uid,
		      char *uid)
{
	struct targets *t = w->t;
	struct match m = {.cgroup_id = ino};

	/* A container: its own directory names it (children are covered by BPF). */
	if (t->ncontainers && !procmeta__cgroup_path_id(name, strlen(name), m.cid)) {
		for (size_t i = 0; i < t->ncontainers; i++) {
			if (strncmp(m.cid, t->containers[i].id, t->containers[i].len))
				continue;
			m.target = i;
			add_match(t, &m);
		}
	}
	/* A pod: the first directory on the path naming it is the pod's own. */
	uid[0] = '\0';
	if (parent_uid[0]) {
		strcpy(uid, parent_uid);
	} else if (t->npods && !procmeta__cgroup_path_pod_uid(w->path, w->len, uid)) {
		m.pod = true;
		for (size_t i = 0; i < t->npods; i++) {
			for (uint32_t k = 0; k < t->pods[i].nuids; k++) {
				if (strcmp(uid, t->pods[i].uids[k]))
					continue;
				m.target = i;
				add_match(t, &m);
			}
		}
	}
}

static void walk_dir(struct walk *w, int dfd, int depth, const char *parent_uid)
{
	DIR *d = fdopendir(dfd);
	struct dirent *de;

	if (!d) {
		close(dfd);
		return;
	}
	while ((de = readdir(d)) && w->dirs < TARGETS_MAX_DIRS) {
		char uid[PROCMETA_POD_UID_LEN + 1];
		size_t nl = strlen(de->d_name), saved = w->len;
		int cfd;

		if (de->d_type != DT_DIR || de->d_name[0] == '.')
			continue;
		if (w->len + 1 + nl >= sizeof(w->path))
			continue;
		w->path[w->len++] = '/';
		memcpy(w->path + w->len, de->d_name, nl + 1);
		w->len += nl;
		w->dirs++;
		/* On cgroupfs the inode number of a directory is its cgroup id. */
		check_dir(w, de->d_name, de->d_ino, parent_uid, uid);
		/* Bounded like the BPF side: deeper cgroups are matched by their ancestors. */
		if (depth < SP_FILTER_MAX_LEVEL) {
			char full[PATH_MAX];

			/* Watched before it is read: a child made meanwhile is an event. */
			if (snprintf(full, sizeof(full), "%s%s", w->t->cgroup_root, w->path) <
			    (int)sizeof(full))
				watch(w->t, full);
			cfd = openat(dfd, de->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
			if (cfd >= 0)
				walk_dir(w, cfd, depth + 1, uid);
		}
		w->len = saved;
		w->path[saved] = '\0';
	}
	closedir(d);
}

static int resolve_pod_name(void *ctx, const struct k8s_pod_ref *ref)
{
	struct targets *t = ctx;

	for (size_t i = 0; i < t->npods; i++) {
		struct pod_target *p = &t->pods[i];

		if (!p->by_name || p->nuids == POD_UIDS_PER_NAME || strcmp(p->name, ref->name) ||
		    strcmp(p->namespace, ref->namespace))
			continue;
		strcpy(p->uids[p->nuids++], ref->uid);
	}
	return 0;
}

static void walk_cgroups(struct targets *t)
{
	struct walk w = {.t = t};
	uint64_t t0 = util__mono_ns();
	int fd;

	/* New watches for the new walk: none is left on directories that went away. */
	if (t->ifd >= 0)
		close(t->ifd);
	t->ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	t->watch_failed = t->ifd < 0;
	t->last_walk_ns = t0;
	for (size_t i = 0; i < t->npods; i++)
		if (t->pods[i].by_name)
			t->pods[i].nuids = 0;
	if (t->npods) {
		char logs[PATH_MAX];

		snprintf(logs, sizeof(logs), "%s/var/log/pods", t->root);
		if (t->ifd >= 0 && inotify_add_watch(t->ifd, logs, WATCH_MASK) < 0 &&
		    errno != ENOENT)
			t->watch_failed = true;
		k8smeta__scan_pods(t->root, resolve_pod_name, t, NULL);
	}
	t->nmatches = 0;
	watch(t, t->cgroup_root);
	fd = open(t->cgroup_root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0)
		walk_dir(&w, fd, 0, "");
	t->st.walks++;
	t->st.walk_dirs = w.dirs;
	t->st.walk_ns += util__mono_ns() - t0;
}

/* The wanted cgroup ids of the matches; a prefix naming several containers adds none. */
static void collect_matches(struct targets *t)
{
	t->st.containers_found = t->st.containers_ambiguous = t->st.pods_found = 0;
	for (size_t i = 0; i < t->ncontainers; i++) {
		const char *first = NULL;

		t->containers[i].ambiguous = false;
		for (size_t k = 0; k < t->nmatches; k++) {
			const struct match *m = &t->matches[k];

			if (m->pod || m->target != i)
				continue;
			if (first && strcmp(first, m->cid))
				t->containers[i].ambiguous = true;
			first = first ? first : m->cid;
		}
		t->containers[i].found = first && !t->containers[i].ambiguous;
		t->st.containers_found += t->containers[i].found;
		t->st.containers_ambiguous += t->containers[i].ambiguous;
	}
	for (size_t i = 0; i < t->npods; i++)
		t->pods[i].found = false;
	for (size_t k = 0; k < t->nmatches; k++) {
		const struct match *m = &t->matches[k];

		if (m->pod)
			t->pods[m->target].found = true;
		if (m->pod || t->containers[m->target].found)
			idset_add(&t->want, m->cgroup_id);
	}
	for (size_t i = 0; i < t->npods; i++)
		t->st.pods_found += t->pods[i].found;
}

/* Brings the map to t->want: removes what left, adds what came. */
static void apply_cgroups(struct targets *t)
{
	struct idset now = {0};
	uint8_t one = 1;

	idset_sort(&t->want);
	for (size_t i = 0; i < t->installed.n; i++) {
		if (idset_has(&t->want, t->installed.ids[i])) {
			if (idset_add(&now, t->installed.ids[i]))
				t->st.map_errors++;
		} else {
			bpf_map_delete_elem(t->maps.cgroup_fd, &t->installed.ids[i]);
		}
	}
	for (size_t i = 0; i < t->want.n; i++) {
		if (idset_has(&t->installed, t->want.ids[i]))
			continue;
		if (bpf_map_update_elem(t->maps.cgroup_fd, &t->want.ids[i], &one, BPF_ANY) ||
		    idset_add(&now, t->want.ids[i])) {
			t->st.map_errors++;
			continue;
		}
	}
	idset_sort(&now);
	free(t->installed.ids);
	t->installed = now;
	t->st.cgroup_ids = now.n;
}

static void refresh(struct targets *t)
{
	t->st.refreshes++;
	t->st.exes_found = t->st.exe_keys = 0;
	for (size_t i = 0; i < t->nexes; i++) {
		refresh_exe(t, &t->exes[i]);
		t->st.exes_found += t->exes[i].found;
		t->st.exe_keys += t->exes[i].nkeys;
	}
	if (t->maps.cgroup_fd < 0)
		return;
	t->want.n = 0;
	t->st.cgroups_found = 0;
	for (size_t i = 0; i < t->ncgroups; i++) {
		struct stat st;

		t->cgroups[i].found = stat(t->cgroups[i].path, &st) == 0 && S_ISDIR(st.st_mode);
		if (!t->cgroups[i].found)
			continue;
		t->st.cgroups_found++;
		if (idset_add(&t->want, st.st_ino))
			t->st.map_errors++;
	}
	if (t->ncontainers || t->npods) {
		/* Walk again only when the tree (or the kubelet's pod list) changed. */
		if (tree_changed(t) || util__mono_ns() - t->last_walk_ns >= TARGETS_FULL_WALK_NS)
			walk_cgroups(t);
		collect_matches(t);
	}
	apply_cgroups(t);
}

/*
 * A script ("#!" first) never is a process's executable: the kernel runs its interpreter, which
 * is what --exe then has to name. Says so once at the start, with the interpreter's path.
 */
static void warn_script(const struct exe_target *e)
{
	char line[128];
	ssize_t n;
	int fd = open(e->path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);

	if (fd < 0)
		return;
	n = read(fd, line, sizeof(line) - 1);
	close(fd);
	if (n < 2 || line[0] != '#' || line[1] != '!')
		return;
	line[n] = '\0';
	line[strcspn(line, "\n")] = '\0';
	fprintf(stderr,
		"spanprof: warning: --exe %s is a script: its processes run its interpreter (%s), "
		"so nothing matches it; give --exe with the interpreter, or --pid\n",
		e->arg, line + 2 + strspn(line + 2, " \t"));
}

int targets__start(struct targets *t, const struct sampler_filter_maps *maps)
{
	t->maps = *maps;
	if ((t->nexes && maps->exe_fd < 0) ||
	    ((t->ncgroups || t->ncontainers || t->npods) && maps->cgroup_fd < 0))
		return -EINVAL;
	refresh(t);
	t->last_ns = util__mono_ns();
	for (size_t i = 0; i < t->nexes; i++)
		if (!t->exes[i].found)
			fprintf(stderr,
				"spanprof: warning: --exe %s: %s does not exist (yet); looked for "
				"again every %llu s\n",
				t->exes[i].arg, t->exes[i].path,
				TARGETS_REFRESH_NS / 1000000000ull);
	for (size_t i = 0; i < t->nexes; i++)
		if (t->exes[i].found)
			warn_script(&t->exes[i]);
	for (size_t i = 0; i < t->ncgroups; i++)
		if (!t->cgroups[i].found)
			fprintf(
			    stderr,
			    "spanprof: warning: --cgroup %s: %s does not exist (yet); looked for "
			    "again every %llu s%s%s%s\n",
			    t->cgroups[i].arg, t->cgroups[i].path,
			    TARGETS_REFRESH_NS / 1000000000ull,
			    t->cgroups[i].hint
				? "; a path as /proc/PID/cgroup shows it is relative "
				  "to the cgroup v2 mount: give --cgroup "
				: "",
			    t->cgroups[i].hint ? t->cgroups[i].hint : "",
			    t->cgroups[i].hint ? " for that" : "");
	for (size_t i = 0; i < t->ncontainers; i++)
		if (!t->containers[i].found)
			fprintf(stderr,
				"spanprof: warning: --container-id %s: %s under %s; looked for "
				"again every %llu s\n",
				t->containers[i].id,
				t->containers[i].ambiguous ? "names several containers (give more "
							     "digits)"
							   : "no container cgroup",
				t->cgroup_root, TARGETS_REFRESH_NS / 1000000000ull);
	for (size_t i = 0; i < t->npods; i++)
		if (!t->pods[i].found)
			fprintf(stderr,
				"spanprof: warning: --k8s-pod %s: %s; looked for again every %llu "
				"s\n",
				t->pods[i].arg,
				t->pods[i].by_name && !t->pods[i].nuids
				    ? "no such pod in the kubelet's /var/log/pods"
				    : "no pod cgroup (kubepods) found",
				TARGETS_REFRESH_NS / 1000000000ull);
	if (t->st.map_errors)
		fprintf(stderr,
			"spanprof: warning: %llu targeting entries did not fit the BPF maps\n",
			(unsigned long long)t->st.map_errors);
	return 0;
}

void targets__tick(struct targets *t, uint64_t now_ns)
{
	if (now_ns - t->last_ns < TARGETS_REFRESH_NS)
		return;
	t->last_ns = now_ns;
	refresh(t);
}

void targets__stats(const struct targets *t, struct targets_stats *out)
{
	*out = t->st;
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * targets: resolves the targeting flags that BPF cannot check by name into the keys of the
 * sampler's filter maps (bpf/filter.bpf.h), and keeps them current:
 *   --exe PATH         -> (device, inode) of the file; re-stat'ed, so a replaced binary is
 *                         matched too (the last TARGETS_EXE_KEYS identities stay in the map:
 *                         processes started from the old file still run it);
 *   --cgroup PATH      -> the cgroup v2 directory's inode number (= its cgroup id); PATH is
 *                         absolute, or relative to the cgroup v2 mount;
 *   --container-id ID  -> cgroup ids of the directories naming that container (full id, or a
 *                         prefix of at least 12 hex digits that names one container only);
 *   --k8s-pod UID|NAMESPACE/NAME -> cgroup ids of the pod's directories (NAMESPACE/NAME via the
 *                         kubelet's /var/log/pods/<namespace>_<name>_<uid>, k8smeta.h).
 * The cgroup filter also matches every descendant of a listed cgroup (BPF walks the task's
 * ancestors), so a pod or slice covers its containers. Everything is resolved again every
 * TARGETS_REFRESH_NS by targets__tick(): containers and pods started later, services restarted
 * (new cgroup), binaries replaced. Cost: one stat per --exe and --cgroup; with --container-id
 * or --k8s-pod a walk of the cgroup v2 directory tree (readdir only, no stat), done again only
 * when inotify reports a directory created or removed in it (or in /var/log/pods), and at
 * least every TARGETS_FULL_WALK_NS; every refresh when the inotify watches run out.
 *
 * Paths are under the host root (SPANPROF_HOST_ROOT: a DaemonSet that mounts the node's / at
 * /host), except /proc/... (the host's, with hostPID); the cgroup v2 mount is <root>/sys/fs/cgroup,
 * or <root>/sys/fs/cgroup/unified on a hybrid (v1 + v2) host. Not thread-safe.
 */
#ifndef SPANPROF_TARGETS_H
#define SPANPROF_TARGETS_H

#include <stddef.h>
#include <stdint.h>

#include "sampling/sampler_user.h"

#define TARGETS_REFRESH_NS 2000000000ull
#define TARGETS_FULL_WALK_NS 60000000000ull /* walk even without a change (lost events) */
#define TARGETS_EXE_KEYS 8		    /* identities kept per --exe path */
#define TARGETS_CGROUP_IDS 8192		    /* map room for --container-id / --k8s-pod cgroups */
#define TARGETS_MIN_ID_PREFIX 12	    /* hex digits of a --container-id prefix */
#define TARGETS_MAX_DIRS (1 << 20)	    /* cgroup directories visited per walk */

struct targets_opts {
	const char *host_root; /* NULL or "": / */
	const char *const *exes;
	size_t nexes;
	const char *const *cgroups;
	size_t ncgroups;
	const char *const *container_ids; /* checked by targets__check_container_id() */
	size_t ncontainer_ids;
	const char *const *pods; /* checked by targets__check_pod() */
	size_t npods;
};

/* Syntax of a --container-id value: 12 to 64 hex digits. 0 or -EINVAL. */
int targets__check_container_id(const char *id);
/* Syntax of a --k8s-pod value: a pod uid (8-4-4-4-12 hex) or NAMESPACE/NAME. 0 or -EINVAL. */
int targets__check_pod(const char *pod);

struct targets;

/*
 * Checks the options against the host: cgroup v2 must be mounted when a cgroup-based filter
 * is given, and an existing --cgroup path must be a cgroup v2 directory. NULL + errno and a
 * message on stderr naming the flag (EINVAL, ENOENT, ENOMEM). Strings are copied.
 */
struct targets *targets__new(const struct targets_opts *o);
/* NULL is a no-op. Leaves the maps as they are (they die with the sampler). */
void targets__free(struct targets *t);

/* Map sizes the sampler needs (sampler_opts.filter_exe_max / filter_cgroup_max); 0: no map. */
uint32_t targets__exe_max(const struct targets *t);
uint32_t targets__cgroup_max(const struct targets *t);

/*
 * First resolution into the sampler's maps, before sampling starts. Prints one warning per
 * filter that matches nothing yet (it is looked for again at every refresh). 0 or -errno
 * (a map update failed).
 */
int targets__start(struct targets *t, const struct sampler_filter_maps *maps);
/* Resolves again when TARGETS_REFRESH_NS have passed since the last time (@now_ns: monotonic). */
void targets__tick(struct targets *t, uint64_t now_ns);

struct targets_stats {
	uint64_t refreshes;	       /* resolutions done */
	uint64_t walks;		       /* cgroup tree walks */
	uint64_t walk_ns;	       /* total time in them */
	uint64_t walk_dirs;	       /* directories seen by the last walk */
	uint64_t map_errors;	       /* map updates refused (full map, or an error) */
	uint32_t exes_found;	       /* --exe paths that exist now */
	uint32_t exe_keys;	       /* executable identities in the map */
	uint32_t cgroups_found;	       /* --cgroup paths that exist now */
	uint32_t containers_found;     /* --container-id values naming exactly one container now */
	uint32_t containers_ambiguous; /* --container-id prefixes naming several */
	uint32_t pods_found;	       /* --k8s-pod values with cgroups now */
	uint32_t cgroup_ids;	       /* cgroup ids in the map */
};
void targets__stats(const struct targets *t, struct targets_stats *out);

#endif /* SPANPROF_TARGETS_H */

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * k8smeta: Kubernetes names of profiled processes (--k8s), from what the kubelet leaves on the
 * node, without talking to the API server:
 *   /var/log/pods/<namespace>_<pod>_<uid>/<container>/N.log        (pod uid -> name, namespace)
 *   /var/log/containers/<pod>_<namespace>_<container>-<id>.log     (container id -> names)
 * These are the kubelet's log layout (pkg/kubelet/kuberuntime, the CRI logging layout every
 * runtime follows). Names are Kubernetes object names: DNS subdomains (pods, at most 253
 * characters) and DNS labels (namespaces and containers, at most 63), which cannot contain '_'.
 *
 * The process's pod uid and container id come from its cgroup path (procmeta.h); the node name
 * is the agent's own (downward API: K8S_NODE_NAME or NODE_NAME). Never reads the environment
 * of profiled processes.
 *
 * All paths are under a host root ("" or NULL: "/"; a DaemonSet that mounts the node's root at
 * /host sets SPANPROF_HOST_ROOT=/host). Not thread-safe.
 */
#ifndef SPANPROF_K8SMETA_H
#define SPANPROF_K8SMETA_H

#include <stddef.h>
#include <stdint.h>

#include "process/procmeta.h"

#define K8S_POD_NAME_MAX 253
#define K8S_LABEL_MAX 63

/* A /var/log/pods entry. */
struct k8s_pod_ref {
	char namespace[K8S_LABEL_MAX + 1];
	char name[K8S_POD_NAME_MAX + 1];
	char uid[PROCMETA_POD_UID_LEN + 1]; /* lower case */
};

/* A /var/log/containers entry. */
struct k8s_container_ref {
	char pod[K8S_POD_NAME_MAX + 1];
	char namespace[K8S_LABEL_MAX + 1];
	char container[K8S_LABEL_MAX + 1];
	char id[PROCMETA_CONTAINER_ID_LEN + 1]; /* lower case */
};

/*
 * Parses a /var/log/pods directory name "<namespace>_<pod>_<uid>" (NUL-terminated @name).
 * Returns 0, or -EINVAL when it is not one (names checked as DNS names, uid as 8-4-4-4-12 hex).
 */
int k8smeta__parse_pod_dir(const char *name, struct k8s_pod_ref *out);

/*
 * Parses a /var/log/containers file name "<pod>_<namespace>_<container>-<64 hex>.log".
 * Returns 0, or -EINVAL.
 */
int k8smeta__parse_container_log(const char *name, struct k8s_container_ref *out);

/*
 * Calls @cb for every valid entry of <host_root>/var/log/pods (invalid names are skipped and
 * counted in *@skipped when not NULL). Stops at the first non-zero return of @cb and returns
 * it; else 0, or a negative errno when the directory cannot be read (-ENOENT: no kubelet).
 */
int k8smeta__scan_pods(const char *host_root, int (*cb)(void *ctx, const struct k8s_pod_ref *pod),
		       void *ctx, uint64_t *skipped);

struct k8smeta;

/* A cache over @host_root (copied). NULL + errno (ENOMEM). */
struct k8smeta *k8smeta__new(const char *host_root);
/* NULL is a no-op. */
void k8smeta__free(struct k8smeta *k);

/*
 * For a process in a pod (m->pod_uid or m->container_id set): sets m->k8s (owned by @m) with
 * the names found: container names by container id, else pod name and namespace by pod uid.
 * On a miss the two directories are read again, at most once per second; entries are bounded
 * (K8SMETA_MAX_ENTRIES each). Leaves m->k8s NULL for a process outside any pod.
 * Returns 0, or -ENOMEM (m->k8s then stays NULL).
 */
int k8smeta__fill(struct k8smeta *k, struct procmeta *m);

#define K8SMETA_MAX_ENTRIES 65536

struct k8smeta_stats {
	uint64_t scans;		   /* reads of the two directories */
	uint64_t hits;		   /* processes named (pod or container) */
	uint64_t misses;	   /* processes in a pod the log layout did not name */
	uint64_t skipped;	   /* directory entries that were not kubelet names */
	uint32_t pods, containers; /* entries in the cache now */
};
void k8smeta__stats(const struct k8smeta *k, struct k8smeta_stats *out);

#endif /* SPANPROF_K8SMETA_H */

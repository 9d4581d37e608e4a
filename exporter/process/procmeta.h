/* SPDX-License-Identifier: Apache-2.0 */
/*
 * procmeta: what the OTel resource of a profiled process needs, read from /proc.
 *
 * Only these facts are read, nothing else:
 * - OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES from /proc/PID/environ (every other
 *   variable is skipped without being copied: environments hold secrets);
 * - the executable path (/proc/PID/exe) and its base name;
 * - container.id: the 64-hex-digit id in the /proc/PID/cgroup path of docker, containerd,
 *   cri-o, podman and kubepods cgroups (systemd scopes "<runtime>-<id>.scope", cgroupfs
 *   directories "<id>", and the "<slice>:<runtime>:<id>" form of the systemd cgroup driver);
 * - the Kubernetes pod uid in the same path ("kubepods-<qos>-pod<uid>.slice" with '_' for '-'
 *   under the systemd driver, "kubepods/<qos>/pod<uid>" under cgroupfs).
 *
 * Formats: OTEL_* variables as in the OpenTelemetry SDK environment variable specification
 * (OTEL_RESOURCE_ATTRIBUTES: "key=value,..." in the W3C Baggage style, values
 * percent-decoded); /proc files as in proc(5).
 *
 * Ownership: a struct procmeta owns every string it points to; procmeta__clear() frees them.
 * Not thread-safe per struct; the functions keep no global state.
 */
#ifndef SPANPROF_PROCMETA_H
#define SPANPROF_PROCMETA_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* At most this many OTEL_RESOURCE_ATTRIBUTES entries are kept (the rest is dropped). */
#define PROCMETA_MAX_ATTRS 32
#define PROCMETA_CONTAINER_ID_LEN 64
#define PROCMETA_POD_UID_LEN 36 /* 8-4-4-4-12 hex digits, lower case, '-' separated */

struct procmeta_attr {
	char *key;
	char *value;
};

/*
 * Kubernetes names of a process in a pod (--k8s, filled by exporter/process/k8smeta.h from the
 * kubelet's log layout); each NULL when unknown. Exported with k8s.pod.uid.
 */
struct procmeta_k8s {
	char *pod_name;
	char *namespace;
	char *container_name;
};

struct procmeta {
	/*
	 * Never NULL after a successful procmeta__read(): OTEL_SERVICE_NAME, else service.name
	 * from OTEL_RESOURCE_ATTRIBUTES, else "unknown_service:<exe_name>" (or
	 * "unknown_service" when no name is known), as the OTel resource SDK spec says.
	 */
	char *service_name;
	char *exe_path; /* absolute, " (deleted)" stripped; NULL if unknown (kernel thread) */
	char *exe_name; /* base name of exe_path, else /proc/PID/comm; NULL if unknown */
	char container_id[PROCMETA_CONTAINER_ID_LEN + 1]; /* lower-case hex, "" if none */
	/* Pod uid from the cgroup path, "" if none; exported (k8s.pod.uid) only when k8s is set. */
	char pod_uid[PROCMETA_POD_UID_LEN + 1];
	/* NULL unless the agent runs with --k8s (owned; see k8smeta.h). */
	struct procmeta_k8s *k8s;
	/* OTEL_RESOURCE_ATTRIBUTES entries in input order, keys unique (the last one wins). */
	uint32_t nattrs;
	struct procmeta_attr *attrs;
	/* Raw OTEL_SERVICE_NAME value, NULL when unset or empty. */
	char *env_service_name;
};

/*
 * Fills @out (which must be zeroed or cleared) for process @pid.
 * Returns 0 when something was read (missing pieces stay NULL/""), -ESRCH when the process
 * does not exist or vanished while being read, -EACCES (or -EPERM) when none of its files
 * could be read for lack of permission, -ENOMEM. On error @out holds nothing.
 */
int procmeta__read(int pid, struct procmeta *out);

/* Same, with @proc_root instead of "/proc" (tests point it at a fixture tree). */
int procmeta__read_at(const char *proc_root, int pid, struct procmeta *out);

/* Frees what @m owns and zeroes it. NULL is a no-op. */
void procmeta__clear(struct procmeta *m);

/*
 * Parses an environ block: @len bytes of NUL-separated "NAME=value" entries (the last one
 * may lack its NUL). Keeps OTEL_SERVICE_NAME and the parsed OTEL_RESOURCE_ATTRIBUTES into
 * @out (first occurrence of each variable wins, as getenv does) and derives service_name
 * from them (without an exe name: call procmeta__finish() after setting exe_name).
 * Returns 0 or -ENOMEM. Garbage is skipped, never an error.
 */
int procmeta__parse_environ(const char *buf, size_t len, struct procmeta *out);

/*
 * Parses an OTEL_RESOURCE_ATTRIBUTES value (@len bytes, need not be NUL-terminated) into
 * out->attrs, replacing what was there. Keys and values are trimmed of spaces and tabs,
 * values percent-decoded. As the spec asks, a malformed value (an entry without '=', an
 * empty key, a bad %XX escape, a decoded NUL) discards the whole variable: returns -EINVAL
 * and leaves no attribute. Returns 0 or -ENOMEM otherwise.
 */
int procmeta__parse_resource_attributes(const char *s, size_t len, struct procmeta *out);

/*
 * Finds the container id in a /proc/PID/cgroup stream (lines "id:controllers:path").
 * Writes it, NUL-terminated, to @id (PROCMETA_CONTAINER_ID_LEN + 1 bytes).
 * Returns 0 when found, -ENOENT when no line names a container, -EIO on a read error.
 */
int procmeta__parse_cgroup(FILE *f, char *id);

/*
 * Same, and also writes the pod uid (PROCMETA_POD_UID_LEN + 1 bytes, "" when no line names a
 * pod) to @pod_uid when it is not NULL. The result still says whether a container id was found.
 */
int procmeta__parse_cgroup_ids(FILE *f, char *id, char *pod_uid);

/*
 * Checks one cgroup path (@len bytes, need not be NUL-terminated); same results as
 * procmeta__parse_cgroup(). The deepest path component naming a container wins.
 */
int procmeta__cgroup_path_id(const char *path, size_t len, char *id);

/*
 * Finds the Kubernetes pod uid in one cgroup path: the deepest component that is
 * "pod<uid>" (cgroupfs driver) or "...kubepods...-pod<uid>[.slice]" (systemd driver, '_' in
 * place of '-'), in a path that mentions "kubepods". Writes it normalized (lower case, '-') to
 * @uid (PROCMETA_POD_UID_LEN + 1 bytes). Returns 0, or -ENOENT.
 */
int procmeta__cgroup_path_pod_uid(const char *path, size_t len, char *uid);

/*
 * (Re)computes service_name from env_service_name, the service.name attribute and
 * exe_name. Returns 0 or -ENOMEM.
 */
int procmeta__finish(struct procmeta *m);

/* Value of attribute @key, or NULL. */
const char *procmeta__attr(const struct procmeta *m, const char *key);

#endif /* SPANPROF_PROCMETA_H */

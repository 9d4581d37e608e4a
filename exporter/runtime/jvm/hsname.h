/* TEMP STUB */
#ifndef SPANPROF_RUNTIME_JVM_HSNAME_H
#define SPANPROF_RUNTIME_JVM_HSNAME_H
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
struct hsvm;
struct hsname;
struct hs_line {
	const char *klass, *method, *file;
	int line;
};
struct hs_frame_name {
	int n;
	const struct hs_line *lines;
};
struct hsname *hsname__new(pid_t pid, const struct hsvm *vm, int *err);
void hsname__free(struct hsname *n);
int hsname__interpreted(struct hsname *n, uint64_t method, uint32_t cm, uint32_t bcp_offset,
			struct hs_frame_name *out);
int hsname__compiled(struct hsname *n, uint64_t nm, uint32_t compile_id, uint32_t method_lo32,
		     uint64_t pc, bool exact, struct hs_frame_name *out);
#endif

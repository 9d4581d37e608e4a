/* TEMP STUB */
#include <stdlib.h>
#include "runtime/jvm/hsname.h"
struct hsname {
	int x;
};
struct hsname *hsname__new(pid_t pid, const struct hsvm *vm, int *err)
{
	(void)pid;
	(void)vm;
	(void)err;
	return calloc(1, sizeof(struct hsname));
}
void hsname__free(struct hsname *n)
{
	free(n);
}
static const struct hs_line L = {"stub", "interp", "", 0}, C = {"stub", "compiled", "", 0};
int hsname__interpreted(struct hsname *n, uint64_t method, uint32_t cm, uint32_t b,
			struct hs_frame_name *out)
{
	(void)n;
	(void)method;
	(void)cm;
	(void)b;
	out->n = 1;
	out->lines = &L;
	return 0;
}
int hsname__compiled(struct hsname *n, uint64_t nm, uint32_t c, uint32_t m, uint64_t pc, bool e,
		     struct hs_frame_name *out)
{
	(void)n;
	(void)nm;
	(void)c;
	(void)m;
	(void)pc;
	(void)e;
	out->n = 1;
	out->lines = &C;
	return 0;
}

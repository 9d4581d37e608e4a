/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stddef.h>

#include "sampler.h"
#include "profile/profile.h"
#include "profile/stackend.h"

#define STACKEND_NAME(name, marker) [name] = marker,
static const char *const names[SP_USTACK_END_MAX] = {SP_USTACK_END_LIST(STACKEND_NAME)};
#undef STACKEND_NAME

const char *stackend__name(uint32_t reason)
{
	return reason < SP_USTACK_END_MAX ? names[reason] : NULL;
}

uint32_t stackend__location(struct profile *p, uint32_t reason)
{
	const char *name = stackend__name(reason);
	struct profile_function fn = {0};
	struct profile_line line = {0};
	uint32_t loc;

	if (!name) {
		errno = 0;
		return 0;
	}
	loc = profile__find_location(p, 0, reason, FRAME_ABORT);
	if (loc)
		return loc;
	fn.name = fn.system_name = profile__intern_string(p, name);
	if (!fn.name)
		return 0;
	line.function = profile__intern_function(p, &fn);
	if (!line.function)
		return 0;
	return profile__intern_location(p, 0, reason, FRAME_ABORT, &line, 1);
}

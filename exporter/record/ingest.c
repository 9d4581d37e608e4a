/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <string.h>

#include "profile/profile.h"
#include "record/ingest.h"
#include "resolve/resolve.h"
#include "spans/spanlinks.h"

int ingest__sample(struct ingest *in, const struct sp_sample *s, uint64_t count, uint64_t value)
{
	struct profile_sample_key key = {0};
	char comm[SP_COMM_LEN + 1], pcomm[SP_COMM_LEN + 1];
	struct profile *p = in->profile;
	uint64_t ts = s->time_boot_ns + in->boot_to_unix_ns;
	uint32_t n;
	int err;

	n = resolve__sample(in->resolve, p, s, in->locs);
	memcpy(comm, s->comm, SP_COMM_LEN);
	comm[SP_COMM_LEN] = '\0';
	memcpy(pcomm, s->pcomm, SP_COMM_LEN);
	pcomm[SP_COMM_LEN] = '\0';
	key.stack = profile__intern_stack(p, in->locs, n);
	key.type = s->type < PROFILE_NTYPES ? s->type : PROFILE_CPU;
	key.addr = s->addr;
	key.pid = s->pid;
	key.tid = s->tid;
	key.cpu = s->cpu;
	key.comm = profile__intern_string(p, comm);
	key.process_name = profile__intern_string(p, pcomm[0] ? pcomm : comm);
	if (in->links && s->ctx_len && spanlinks__sample(in->links, p, s, &key.link, &key.attrs)) {
		key.link = key.attrs = 0; /* keep the sample, without its span */
		in->link_drops++;
	}
	if (key.type == PROFILE_CPU) {
		err = profile__add_sample(p, &key, ts, 1);
	} else {
		/* An event stamped when it began (offcpu: switch-out) may have begun before the
		 * current export interval: keep it inside the interval it is exported in. */
		if (ts < in->interval_start_unix)
			ts = in->interval_start_unix;
		err = profile__add_event(p, &key, ts, count, value);
	}
	return err ? err : (int)key.type;
}

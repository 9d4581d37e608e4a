// SPDX-License-Identifier: Apache-2.0
/*
 * Fuzz target: an OTEP 4719 process context payload (protobuf ProcessContext, or a bare Resource)
 * through procctx__decode() (exporter/spans/procctx.c), with the protobuf-c code generated from
 * otlp-proto/. On success every string the struct points to must be live and terminated and the
 * key map at most PROCCTX_MAX_KEYS long; on failure the struct must be left empty. procctx__free()
 * must accept the struct twice.
 */
#include <string.h>

#include "fuzz.h"
#include "spans/procctx.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	return 0;
}

static void check_str(const char *s)
{
	FUZZ_CHECK(s && strlen(s) < SIZE_MAX); /* strlen: ASan checks the string */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct procctx empty;
	struct procctx c;
	size_t i;
	int err;

	err = procctx__decode(data, size, &c);
	FUZZ_CHECK(err == 0 || err == -EBADMSG || err == -ENOMEM);
	if (err) {
		FUZZ_CHECK(!memcmp(&c, &empty, sizeof(c)));
		return 0;
	}
	FUZZ_CHECK(c.published_at_ns == 0);
	if (c.service_name)
		check_str(c.service_name);
	if (c.schema_version)
		check_str(c.schema_version);
	FUZZ_CHECK(!c.nresource || c.resource);
	for (i = 0; i < c.nresource; i++) {
		check_str(c.resource[i].key);
		check_str(c.resource[i].value);
	}
	FUZZ_CHECK(c.nkeys <= PROCCTX_MAX_KEYS && (!c.nkeys || c.key_map));
	for (i = 0; i < c.nkeys; i++)
		check_str(c.key_map[i]);
	procctx__free(&c);
	FUZZ_CHECK(!memcmp(&c, &empty, sizeof(c)));
	procctx__free(&c);
	return 0;
}

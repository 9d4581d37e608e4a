/*
 * Unit tests of exporter/resolve/ (resolve__user(), resolve/frame.c) on this process's own code:
 * a PC is named where it executes when it is a stack's leaf, and at the call before it when it is
 * a return address, whichever of the two a profile met first; a PLT stub by the symbol its GOT
 * slot is relocated against. Runs without root.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "process/proctab.h"
#include "profile/profile.h"
#include "resolve/resolve.h"
#include "symbols/symbolize.h"

#include "../testproc.h"

/*
 * rp_ends_in_call ends with a call that does not return, and rp_after_call begins at that
 * call's return address: GCC lays out a function's cold part that ends in _Unwind_Resume this
 * way, with the next function's cold part right after it.
 */
extern char rp_ends_in_call[], rp_after_call[], rp_calls[], rp_calls_ret[];
__asm__(".text\n"
	".globl rp_ends_in_call\n"
	".type rp_ends_in_call, @function\n"
	"rp_ends_in_call:\n"
	"\tcall abort@PLT\n"
	".size rp_ends_in_call, .-rp_ends_in_call\n"
	".globl rp_after_call\n"
	".type rp_after_call, @function\n"
	"rp_after_call:\n"
	"\tret\n"
	".size rp_after_call, .-rp_after_call\n"
	".globl rp_calls\n"
	".type rp_calls, @function\n"
	"rp_calls:\n"
	"\tcall rp_after_call\n"
	".globl rp_calls_ret\n"
	"rp_calls_ret:\n"
	"\tret\n"
	".size rp_calls, .-rp_calls\n");

struct fixture {
	struct symcache *syms;
	struct proctab *procs;
	struct resolve *resolve;
	struct proc *proc;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	f->syms = symcache__new(NULL);
	f->procs = f->syms ? proctab__new(f->syms) : NULL;
	f->resolve = f->procs ? resolve__new(f->procs, f->syms, NULL) : NULL;
	assert_non_null(f->resolve);
	f->proc = proctab__get(f->procs, getpid(), start_ns(getpid()));
	assert_non_null(f->proc);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	resolve__free(f->resolve);
	proctab__free(f->procs);
	symcache__free(f->syms);
	free(f);
	return 0;
}

/* The symbol of location @loc's physical function (its last line). */
static const char *function_of(struct profile *p, uint32_t loc)
{
	const struct profile_location *l = profile__location(p, loc);
	const struct profile_line *lines = profile__location_lines(p, loc);

	assert_non_null(l);
	assert_true(l->nlines >= 1);
	return profile__string(p, profile__function(p, lines[l->nlines - 1].function)->system_name);
}

/* rp_after_call's address as the leaf, then as a return address (@leaf_first), or the other
 * way round: each is named for what it is, in one profile. */
static void name_both(struct fixture *f, bool leaf_first)
{
	uint64_t after = (uint64_t)(uintptr_t)rp_after_call;
	uint64_t leaf_stack[1] = {after};
	uint64_t caller_stack[2] = {(uint64_t)(uintptr_t)rp_ends_in_call, after};
	struct profile *p = profile__new();
	uint32_t leaf[1], caller[2];

	assert_non_null(p);
	resolve__profile_reset(f->resolve); /* a new profile: its own mappings */
	for (int round = 0; round < 2; round++) {
		if (leaf_first == !round) {
			assert_int_equal(
			    resolve__user(f->resolve, f->proc, p, leaf_stack, 1, NULL, 0, leaf), 1);
			assert_string_equal(function_of(p, leaf[0]), "rp_after_call");
			assert_int_equal(profile__location(p, leaf[0])->roles,
					 PROFILE_ROLE(PC_EXACT));
		} else {
			assert_int_equal(
			    resolve__user(f->resolve, f->proc, p, caller_stack, 2, NULL, 0, caller),
			    2);
			assert_string_equal(function_of(p, caller[1]), "rp_ends_in_call");
			assert_int_equal(profile__location(p, caller[1])->roles,
					 PROFILE_ROLE(PC_RETURN));
		}
	}
	/* Two locations at one address. */
	assert_int_not_equal(leaf[0], caller[1]);
	assert_int_equal(profile__location(p, leaf[0])->address,
			 profile__location(p, caller[1])->address);
	profile__free(p);
}

static void test_return_address_first(void **state)
{
	name_both(*state, false);
}

static void test_leaf_first(void **state)
{
	name_both(*state, true);
}

/*
 * rp_calls_ret (in rp_calls, after its call; no line information) is named alike as a leaf and
 * as a return address: one location, met both ways, never two equal ones.
 */
static void test_named_alike_is_one_location(void **state)
{
	struct fixture *f = *state;
	uint64_t ret = (uint64_t)(uintptr_t)rp_calls_ret;
	uint64_t leaf_stack[1] = {ret};
	uint64_t caller_stack[2] = {(uint64_t)(uintptr_t)rp_after_call, ret};
	struct profile *p = profile__new();
	uint32_t leaf[1], caller[2];

	assert_non_null(p);
	resolve__profile_reset(f->resolve);
	assert_int_equal(resolve__user(f->resolve, f->proc, p, caller_stack, 2, NULL, 0, caller),
			 2);
	assert_int_equal(resolve__user(f->resolve, f->proc, p, leaf_stack, 1, NULL, 0, leaf), 1);
	assert_string_equal(function_of(p, leaf[0]), "rp_calls");
	assert_int_equal(leaf[0], caller[1]);
	assert_int_equal(profile__location(p, leaf[0])->roles,
			 PROFILE_ROLE(PC_EXACT) | PROFILE_ROLE(PC_RETURN));
	profile__free(p);
}

/*
 * A PLT stub is named as perf names it, NAME@plt, from the relocation of the GOT slot it jumps
 * through: abort's, the target of rp_ends_in_call's call, at the stub's first two instructions
 * (no symbol covers a PLT: it was an address before); never inside an instruction.
 */
static void test_plt_stub_named_from_its_slot(void **state)
{
	struct fixture *f = *state;
	const unsigned char *call = (const unsigned char *)rp_ends_in_call;
	struct profile *p = profile__new();
	uint64_t stub, stack[1], second;
	uint32_t loc[1];
	int32_t rel;

	assert_non_null(p);
	assert_int_equal(call[0], 0xe8); /* call rel32 */
	memcpy(&rel, call + 1, sizeof(rel));
	stub = (uint64_t)(uintptr_t)call + 5 + (uint64_t)(int64_t)rel;
	resolve__profile_reset(f->resolve);
	/* Its first instruction, and its second: the JMP after an ENDBR64 (.plt.sec), else the
	 * PUSH of a lazy-binding .plt entry or the padding of a .plt.got one, after a 6-byte JMP.
	 */
	second = memcmp((const void *)(uintptr_t)stub, "\xf3\x0f\x1e\xfa", 4) ? 6 : 4;
	for (int i = 0; i < 2; i++) {
		stack[0] = stub + (i ? second : 0);
		assert_int_equal(resolve__user(f->resolve, f->proc, p, stack, 1, NULL, 0, loc), 1);
		assert_string_equal(function_of(p, loc[0]), "abort@plt");
	}
	/* Inside an instruction: no PC is ever there, and it is not named. */
	stack[0] = stub + 2;
	assert_int_equal(resolve__user(f->resolve, f->proc, p, stack, 1, NULL, 0, loc), 1);
	assert_int_equal(profile__location(p, loc[0])->nlines, 0);
	profile__free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_return_address_first),
	    cmocka_unit_test(test_leaf_first),
	    cmocka_unit_test(test_named_alike_is_one_location),
	    cmocka_unit_test(test_plt_stub_named_from_its_slot),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}

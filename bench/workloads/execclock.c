/*
 * Benchmark workload for bench/unwind/exec_first_stack.py: a program whose stack tells the time
 * since it was launched. Build it without frame pointers (-fomit-frame-pointer: only CFI unwinds
 * it) and with -fno-ipa-icf -fno-optimize-sibling-calls (every slot function stays a frame of its
 * own).
 *
 * Usage: execclock T0_NS SLOTS
 *
 * T0_NS is the CLOCK_MONOTONIC time (ns) at which the launcher started it. Until SLOTS slots of
 * SLOT_MS ms since T0_NS are over, it burns CPU in slot_NNN() (NNN = whole slots elapsed since
 * T0_NS), under main: a profile's first complete stack of this program (root _start, through
 * main and slot_NNN) was taken NNN * SLOT_MS to (NNN + 1) * SLOT_MS ms after launch.
 */
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#define SLOT_MS 5
#define NSLOTS 400 /* slot functions defined below: 2 s */

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

__attribute__((noinline)) static void burn(uint64_t end)
{
	volatile uint64_t x = 0;

	while (now_ns() < end)
		for (int i = 0; i < 1000; i++)
			x += (uint64_t)i * 2654435761u;
}

/* clang-format off */
/* slot_NNN: its own frame (the returned value keeps the call from being a tail call). */
#define SLOT(n) __attribute__((noinline)) int slot_##n(uint64_t end) { burn(end); return n; }
#define SLOT10(d) SLOT(d##0) SLOT(d##1) SLOT(d##2) SLOT(d##3) SLOT(d##4) \
	SLOT(d##5) SLOT(d##6) SLOT(d##7) SLOT(d##8) SLOT(d##9)
#define SLOT100(h) SLOT10(h##0) SLOT10(h##1) SLOT10(h##2) SLOT10(h##3) SLOT10(h##4) \
	SLOT10(h##5) SLOT10(h##6) SLOT10(h##7) SLOT10(h##8) SLOT10(h##9)
SLOT100(1) SLOT100(2) SLOT100(3) SLOT100(4)

#define REF(n) slot_##n,
#define REF10(d) REF(d##0) REF(d##1) REF(d##2) REF(d##3) REF(d##4) \
	REF(d##5) REF(d##6) REF(d##7) REF(d##8) REF(d##9)
#define REF100(h) REF10(h##0) REF10(h##1) REF10(h##2) REF10(h##3) REF10(h##4) \
	REF10(h##5) REF10(h##6) REF10(h##7) REF10(h##8) REF10(h##9)

/* Slot k is slot_(100 + k): names of three digits with the leading 1 meaning nothing. */
static int (*const slots[NSLOTS])(uint64_t) = {REF100(1) REF100(2) REF100(3) REF100(4)};
/* clang-format on */

int main(int argc, char **argv)
{
	uint64_t t0, k, n;
	int sum = 0;

	if (argc < 3)
		return 2;
	t0 = strtoull(argv[1], NULL, 10);
	n = strtoull(argv[2], NULL, 10);
	if (n > NSLOTS)
		n = NSLOTS;
	for (;;) {
		uint64_t now = now_ns();

		k = now < t0 ? 0 : (now - t0) / (SLOT_MS * 1000000ull);
		if (k >= n)
			break;
		sum += slots[k](t0 + (k + 1) * SLOT_MS * 1000000ull);
	}
	return sum == -1;
}

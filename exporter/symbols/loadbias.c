/* SPDX-License-Identifier: Apache-2.0 */
#include "symbols/loadbias.h"

uint64_t loadbias__of(uint64_t map_start, uint64_t map_offset, uint64_t p_vaddr, uint64_t p_offset,
		      uint64_t page)
{
	uint64_t vaddr = p_vaddr & ~(page - 1), offset = p_offset & ~(page - 1);

	return map_start - (vaddr + (map_offset - offset));
}

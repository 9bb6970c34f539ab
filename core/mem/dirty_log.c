/* SPDX-License-Identifier: MIT */
#include "mem/dirty_log.h"

void vl_log_flush(struct vl_dirty_log *log)
{
	if (log->ncached == 0)
		return;
	__atomic_thread_fence(__ATOMIC_RELEASE);
	for (uint32_t i = 0; i < log->ncached; i++)
		__atomic_fetch_or(&log->bitmap[log->cache_byte[i]], log->cache_bits[i],
				  __ATOMIC_RELAXED);
	log->ncached = 0;
}

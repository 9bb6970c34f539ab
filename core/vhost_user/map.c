/* SPDX-License-Identifier: MIT */
/* Mapping the front end's shared memory (memory regions, the dirty log) from the fds it
 * sends. Every number here comes from the front end. */
#define _GNU_SOURCE

#include <stdint.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vhost_user/vu_internal.h"

/* The granule a mapping of fd must start at: the page size, or the file's block size when
 * that is a larger power of two (hugetlbfs reports its huge page size there and refuses
 * offsets and lengths that are not multiples of it). */
static uint64_t map_granule(const struct stat *st)
{
	long page = sysconf(_SC_PAGESIZE);
	uint64_t g = page > 0 ? (uint64_t)page : 4096u;
	uint64_t blk = st->st_blksize > 0 ? (uint64_t)st->st_blksize : 0;

	if (blk > g && (blk & (blk - 1)) == 0)
		g = blk;
	return g;
}

int vu_map_fd(int fd, uint64_t offset, uint64_t size, void **host, struct vu_map *map)
{
	struct stat st;

	if (size == 0)
		return VL_ERR_REGION_ZERO_SIZE;
	if (offset > UINT64_MAX - size)
		return VL_ERR_REGION_OVERFLOW;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
		return VL_ERR_VU_MAP;
	/* Every byte claimed must exist in the file: touching a page past its end would raise
	 * SIGBUS in this process. (A front end can still shrink the file afterwards; memfd
	 * seals are the front end's to set. DPDK and libvhost-user share this exposure.) */
	if (st.st_size < 0 || (uint64_t)st.st_size < offset + size)
		return VL_ERR_VU_FILE_SHORT;

	/* Cannot overflow: offset + size <= st_size < 2^63, and the granule is far smaller. */
	uint64_t g = map_granule(&st);
	uint64_t start = offset & ~(g - 1);
	uint64_t len = (offset - start + size + g - 1) & ~(g - 1);

	if ((uint64_t)(size_t)len != len)
		return VL_ERR_VU_MAP;
	void *p = mmap(NULL, (size_t)len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)start);

	if (p == MAP_FAILED)
		return VL_ERR_VU_MAP;
	map->addr = p;
	map->len = (size_t)len;
	*host = (uint8_t *)p + (offset - start);
	return VL_OK;
}

void vu_unmap(struct vu_map *map)
{
	if (map->addr)
		munmap(map->addr, map->len);
	map->addr = NULL;
	map->len = 0;
}

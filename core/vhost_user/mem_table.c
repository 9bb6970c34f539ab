/* SPDX-License-Identifier: MIT */
/* The memory table: SET_MEM_TABLE, ADD_MEM_REG, REM_MEM_REG, GET_MAX_MEM_SLOTS.
 *
 * Every change builds a complete new table first -- regions checked, new ones mapped, the
 * core's vl_mem built -- then moves every running queue to it (vl_vq_set_mem, undone on the
 * queues already moved if one cannot follow), and only then unmaps what the old table alone
 * used. A front end re-sends SET_MEM_TABLE while traffic runs when its memory grows; between
 * two bursts the queues go from the old mappings to the new ones and no packet is lost. On
 * any failure the old table stays in force and the new mappings are undone. The region fds
 * are never kept: a mapping holds its file, and the dispatcher closes every received fd. */
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "vhost_user/vu_internal.h"

void vu_table_clear(struct vu_table *t)
{
	for (uint32_t i = 0; i < t->n; i++)
		vu_unmap(&t->maps[i]);
	vl_mem_destroy(t->mem);
	free(t->r);
	free(t->maps);
	*t = (struct vu_table){0};
}

bool vu_table_ua_to_gpa(const struct vu_table *t, uint64_t ua, uint64_t len, uint64_t *gpa)
{
	for (uint32_t i = 0; i < t->n; i++) {
		const struct vl_mem_region *r = &t->r[i];

		/* Written so nothing wraps: ua - uaddr only once ua >= uaddr. */
		if (ua >= r->uaddr && ua - r->uaddr < r->size && len <= r->size - (ua - r->uaddr)) {
			*gpa = r->gpa + (ua - r->uaddr);
			return true;
		}
	}
	return false;
}

/* A region as the front end describes it: non-empty, and neither its guest-physical nor its
 * user address range wraps (the mmap offset is checked where it is mapped). */
static int check_region(const struct vl_mem_region *r)
{
	if (r->size == 0)
		return VL_ERR_REGION_ZERO_SIZE;
	if (r->gpa > UINT64_MAX - (r->size - 1) || r->uaddr > UINT64_MAX - (r->size - 1))
		return VL_ERR_REGION_OVERFLOW;
	return VL_OK;
}

static bool ranges_overlap(uint64_t a, uint64_t b, uint64_t size_a, uint64_t size_b)
{
	/* Inclusive last bytes: check_region made them computable. */
	return a <= b + (size_b - 1) && b <= a + (size_a - 1);
}

/* Regions must be disjoint in guest-physical space (translation) and in the front end's
 * address space (ring addresses are translated by user address and must name one place).
 * Only pairs with a new region (index >= first_new) are compared: the regions kept from
 * the old table were checked when they came, so ADD_MEM_REG into a table of hundreds of
 * slots costs one pass, not a pass per pair. */
static int check_disjoint(const struct vl_mem_region *r, uint32_t n, uint32_t first_new)
{
	for (uint32_t j = first_new; j < n; j++)
		for (uint32_t i = 0; i < j; i++)
			if (ranges_overlap(r[i].gpa, r[j].gpa, r[i].size, r[j].size) ||
			    ranges_overlap(r[i].uaddr, r[j].uaddr, r[i].size, r[j].size))
				return VL_ERR_REGION_OVERLAP;
	return VL_OK;
}

/* Move every running queue to nt. If one cannot follow (its rings are not mapped by nt),
 * the ones already moved go back to the old table, which they were valid on. */
static int move_queues(struct vl_vu_dev *dev, const struct vu_table *nt)
{
	for (uint32_t i = 0; i < dev->nrings; i++) {
		struct vl_vq *vq = dev->rings[i].vq;

		if (!vq)
			continue;
		int rc = vl_vq_set_mem(vq, nt->mem);

		if (rc != VL_OK) {
			for (uint32_t j = 0; j < i; j++)
				if (dev->rings[j].vq)
					(void)vl_vq_set_mem(dev->rings[j].vq, dev->table.mem);
			return rc;
		}
	}
	return VL_OK;
}

/* Replace the device's table by: the old regions (all, or all but index `drop`) when
 * keep_old, then `nadd` new regions mapped from fds. On success, old mappings the new table
 * does not carry are unmapped; on failure nothing changed. */
static int table_change(struct vl_vu_dev *dev, bool keep_old, uint32_t drop,
			const struct vu_region_desc *add, const int *fds, uint32_t nadd)
{
	struct vu_table *old = &dev->table;
	uint32_t nkeep = keep_old ? old->n - (drop < old->n ? 1u : 0u) : 0u;
	uint32_t n = nkeep + nadd; /* both bounded by VL_VU_MAX_MEM_SLOTS: no wrap */

	if (n > VL_VU_MAX_MEM_SLOTS)
		return VL_ERR_TOO_MANY_REGIONS;

	struct vu_table nt = {.n = n};
	int rc = VL_ERR_NOMEM;

	nt.r = vl_calloc(n ? n : 1, sizeof(*nt.r));
	nt.maps = vl_calloc(n ? n : 1, sizeof(*nt.maps));
	if (!nt.r || !nt.maps)
		goto fail;

	uint32_t k = 0;

	for (uint32_t i = 0; keep_old && i < old->n; i++) {
		if (i == drop)
			continue;
		nt.r[k] = old->r[i];
		k++;
	}
	for (uint32_t j = 0; j < nadd; j++) {
		/* One read of each field, into our own table. */
		struct vl_mem_region *r = &nt.r[nkeep + j];

		r->gpa = add[j].gpa;
		r->size = add[j].size;
		r->uaddr = add[j].uaddr;
		r->mmap_offset = add[j].mmap_offset;
		rc = check_region(r);
		if (rc != VL_OK)
			goto fail;
	}
	rc = check_disjoint(nt.r, n, nkeep);
	if (rc != VL_OK)
		goto fail;
	/* While logging is on the log must cover the new table too (QEMU grows the log before
	 * it grows the memory; a table past it would have pages written that no bit records). */
	rc = VL_ERR_LOG_TOO_SMALL;
	if (vu_log_on(dev) && !vu_log_covers(&nt, dev->log_bytes))
		goto fail;
	for (uint32_t j = 0; j < nadd; j++) {
		struct vl_mem_region *r = &nt.r[nkeep + j];

		rc = vu_map_fd(fds[j], r->mmap_offset, r->size, &r->host, &nt.maps[nkeep + j]);
		if (rc != VL_OK)
			goto fail;
	}
	nt.mem = vl_mem_create(nt.r, n, &rc);
	if (!nt.mem)
		goto fail;
	rc = move_queues(dev, &nt);
	if (rc != VL_OK)
		goto fail;

	/* Every queue is on the new table: the old one may go. Mappings carried over now
	 * belong to the new table. */
	for (uint32_t i = 0; i < old->n; i++)
		if (!keep_old || i == drop)
			vu_unmap(&old->maps[i]);
	for (uint32_t i = 0, c = 0; keep_old && i < old->n; i++)
		if (i != drop)
			nt.maps[c++] = old->maps[i];
	vl_mem_destroy(old->mem);
	free(old->r);
	free(old->maps);
	*old = nt;
	if (dev->cfg.cb.mem_changed)
		dev->cfg.cb.mem_changed(dev, dev->cfg.opaque);
	return VL_OK;
fail:
	/* Undo only what this call mapped; the carried-over mappings belong to the old table. */
	for (uint32_t j = 0; nt.maps && j < nadd; j++)
		vu_unmap(&nt.maps[nkeep + j]);
	vl_mem_destroy(nt.mem);
	free(nt.r);
	free(nt.maps);
	return rc;
}

int vu_set_mem_table(struct vl_vu_dev *dev, struct vu_msg *m, struct vu_ring *ring,
		     struct vu_reply *reply)
{
	(void)ring;
	(void)reply;
	/* The dispatcher checked nregions <= 8, the payload size and one fd per region. */
	const uint32_t n = m->p.mem.nregions;

	return table_change(dev, false, UINT32_MAX, m->p.mem.regions, m->fds, n);
}

int vu_add_mem_reg(struct vl_vu_dev *dev, struct vu_msg *m, struct vu_ring *ring,
		   struct vu_reply *reply)
{
	(void)ring;
	(void)reply;
	return table_change(dev, true, UINT32_MAX, &m->p.reg.region, m->fds, 1);
}

/* The region to remove is named by guest address, user address and size (spec); the mmap
 * offset is ignored. A stray fd was tolerated by the dispatcher and is closed unused. */
int vu_rem_mem_reg(struct vl_vu_dev *dev, struct vu_msg *m, struct vu_ring *ring,
		   struct vu_reply *reply)
{
	(void)ring;
	(void)reply;
	const struct vu_region_desc want = m->p.reg.region;

	for (uint32_t i = 0; i < dev->table.n; i++) {
		const struct vl_mem_region *r = &dev->table.r[i];

		if (r->gpa == want.gpa && r->uaddr == want.uaddr && r->size == want.size)
			return table_change(dev, true, i, NULL, NULL, 0);
	}
	return VL_ERR_REGION_UNKNOWN;
}

int vu_get_max_mem_slots(struct vl_vu_dev *dev, struct vu_msg *m, struct vu_ring *ring,
			 struct vu_reply *reply)
{
	(void)dev;
	(void)m;
	(void)ring;
	reply->send = true;
	reply->payload = VL_VU_MAX_MEM_SLOTS;
	return VL_OK;
}

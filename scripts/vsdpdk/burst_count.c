/* SPDX-License-Identifier: MIT */
/* LD_PRELOAD shim for DPDK's testpmd (net_vhost port), used by scripts/vs_dpdk_instructions.py.
 *
 * It stands in for rte_vhost_dequeue_burst and rte_vhost_enqueue_burst, calls the real ones
 * in librte_vhost, and counts per entry point the calls, the calls that moved nothing and a
 * histogram of the packets each call moved: callgrind counts instructions and calls, not
 * what a call returned, and the full-burst figures need the empty calls apart.
 *
 * The real call goes through vlcount_dequeue / vlcount_enqueue, which the script gives to
 * callgrind's --toggle-collect: the shim's own functions share the real ones' names, so
 * toggling on those names would turn collection off again inside the real call. The few
 * instructions vlcount_* execute themselves are their self cost in callgrind's output; the
 * script takes the cost of the call edge into librte_vhost instead, which leaves them out.
 *
 * The counts live in the file $VLCOUNT_OUT names, mapped shared, so the script reads them
 * while testpmd runs (between two phases of a run, when its forwarding is stopped and no
 * call is under way): two struct counts, dequeue then enqueue, of native 64-bit words
 * (COUNTS_WORDS each). timeout(1), taskset and valgrind's launcher inherit LD_PRELOAD too:
 * they map the file as well and never write to it. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

struct rte_mempool;
struct rte_mbuf;

typedef uint16_t (*deq_fn)(int, uint16_t, struct rte_mempool *, struct rte_mbuf **, uint16_t);
typedef uint16_t (*enq_fn)(int, uint16_t, struct rte_mbuf **, uint16_t);

/* testpmd asks for at most 512 packets a burst (MAX_PKT_BURST); more is counted apart. */
#define HIST_MAX 512u

struct counts {
	uint64_t calls, empty, packets, offered, over;
	uint64_t hist[HIST_MAX + 1];
};

#define COUNTS_WORDS (5u + HIST_MAX + 1u)
_Static_assert(sizeof(struct counts) == COUNTS_WORDS * sizeof(uint64_t), "no padding");

/* Where the counts go when $VLCOUNT_OUT is unset or cannot be mapped (then they are lost). */
static struct counts spare[2];
static struct counts *deq = &spare[0], *enq = &spare[1];

__attribute__((constructor)) static void map_counts(void)
{
	const char *path = getenv("VLCOUNT_OUT");

	if (!path)
		return;
	int fd = open(path, O_RDWR | O_CREAT, 0644);

	if (fd < 0)
		return;
	/* A size the file already has changes nothing: a second process keeps the counts. */
	if (ftruncate(fd, (off_t)sizeof(spare)) == 0) {
		void *m = mmap(NULL, sizeof(spare), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

		if (m != MAP_FAILED) {
			deq = (struct counts *)m;
			enq = deq + 1;
		}
	}
	close(fd);
}

/* The real entry point of librte_vhost. RTLD_NEXT does not find it: testpmd dlopens the
 * net_vhost driver, and librte_vhost comes in with it, after this shim; by the first call
 * the library is loaded, and RTLD_NOLOAD finds it without loading anything. */
static void *real(const char *name)
{
	void *h = dlopen("librte_vhost.so.23", RTLD_NOW | RTLD_NOLOAD);
	void *f = h ? dlsym(h, name) : NULL;

	if (!f) {
		fprintf(stderr, "burst_count: %s not found in librte_vhost.so.23: %s\n", name,
			dlerror());
		abort();
	}
	return f;
}

static void count(struct counts *c, uint16_t asked, uint16_t n)
{
	c->calls++;
	c->offered += asked;
	c->packets += n;
	if (n == 0)
		c->empty++;
	if (n <= HIST_MAX)
		c->hist[n]++;
	else
		c->over++;
}

__attribute__((noinline)) uint16_t vlcount_dequeue(deq_fn f, int vid, uint16_t q,
						     struct rte_mempool *mp, struct rte_mbuf **p,
						     uint16_t n)
{
	return f(vid, q, mp, p, n);
}

__attribute__((noinline)) uint16_t vlcount_enqueue(enq_fn f, int vid, uint16_t q,
						     struct rte_mbuf **p, uint16_t n)
{
	return f(vid, q, p, n);
}

uint16_t rte_vhost_dequeue_burst(int vid, uint16_t q, struct rte_mempool *mp,
				 struct rte_mbuf **p, uint16_t n);
uint16_t rte_vhost_dequeue_burst(int vid, uint16_t q, struct rte_mempool *mp,
				 struct rte_mbuf **p, uint16_t n)
{
	static deq_fn f;

	if (!f)
		f = (deq_fn)real("rte_vhost_dequeue_burst");
	uint16_t got = vlcount_dequeue(f, vid, q, mp, p, n);

	count(deq, n, got);
	return got;
}

uint16_t rte_vhost_enqueue_burst(int vid, uint16_t q, struct rte_mbuf **p, uint16_t n);
uint16_t rte_vhost_enqueue_burst(int vid, uint16_t q, struct rte_mbuf **p, uint16_t n)
{
	static enq_fn f;

	if (!f)
		f = (enq_fn)real("rte_vhost_enqueue_burst");
	uint16_t got = vlcount_enqueue(f, vid, q, p, n);

	count(enq, n, got);
	return got;
}

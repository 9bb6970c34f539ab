/* SPDX-License-Identifier: MIT */
/* A virtqueue as the device side sees it: setup, state, statistics, notifications.
 *
 * Threading contract: the core takes no locks. Every call on one queue (and on the memory
 * table it uses) must be serialised by the embedder: one thread, or the embedder's own lock.
 * Different queues may run on different threads if they do not share a pool concurrently
 * (pools are not thread-safe either). A dirty log may be shared by queues on different
 * threads: its bits are set by atomic OR.
 *
 * Queues over threads (docs/architecture.md, "Queues over threads"). An embedder that runs
 * queues on worker threads gives each queue exactly one *owner*, the only thread that runs
 * bursts on it or calls any vl_vq_* on it while it runs; the datapath takes no lock. The
 * control thread (the one that handles the front end's messages) changes a running queue
 * only while its owner is paused at a burst boundary, through the owner's vl_vq_gate:
 *   control:  n = vl_vq_gate_pause(gate)   ask, and wait until the owner stopped
 *             ... change the queues: vl_vq_set_mem (a new memory table), vl_vq_destroy
 *             (ring stopped: GET_VRING_BASE, SET_STATUS 0, RESET_DEVICE, disconnection),
 *             enable/disable, vl_vq_set_dirty_log (a log started or moved), any setting,
 *             reading the stats ...
 *             vl_vq_gate_resume(gate, n)   let it go on
 *   owner:    between two bursts (never inside one): if vl_vq_gate_poll(gate) returned
 *             true it was paused, and every pointer it holds to a queue, a table or a pool
 *             the control thread may have replaced must be fetched again.
 * The acknowledgement is a release store the control thread reads with acquire, and the
 * resumption one the owner reads with acquire: what one side did before is visible to the
 * other after (C11 <stdatomic.h>, no lock). An owner that sleeps (poll on its kick fds) must
 * be woken by the embedder after vl_vq_gate_request, or the pause waits for its next burst:
 * vl_vq_gate_pause = vl_vq_gate_request + vl_vq_gate_wait, with the wake-up in between; the
 * owner checks vl_vq_gate_pending before it sleeps. An owner that exits calls
 * vl_vq_gate_leave: its later pauses are granted at once. One gate may cover several queues
 * (all of one owner); pause the gates of every owner whose queues a message touches, or all
 * of them around every message as serve does. */
#ifndef VHOSTLAB_VL_VQ_H
#define VHOSTLAB_VL_VQ_H

#include <stdbool.h>
#include <stdint.h>

#include "vl_mem.h"

#ifdef __cplusplus
extern "C" {
#endif

enum vl_layout {
	VL_LAYOUT_SPLIT = 0,
	VL_LAYOUT_PACKED = 1,
	VL_LAYOUT__COUNT
};

/* Most translated pieces one chain (or one mergeable RX packet) may occupy. A piece is the
 * part of a descriptor that is contiguous in host memory. */
#define VL_CHAIN_MAX_PIECES 1024u

/* Default size bound for copies that are deferred into the per-queue batch (technique 1). */
#define VL_BATCH_THRESHOLD_DEFAULT 256u

struct vl_vq_config {
	enum vl_layout layout;
	uint16_t size_minus_one;  /* queue size - 1 (so 32768 fits); use vl_vq_config_init */
	uint64_t features;        /* negotiated feature bits (VL_FEATURE(...)) */
	uint64_t desc_gpa;        /* split: descriptor table; packed: descriptor ring */
	uint64_t driver_gpa;      /* split: available ring; packed: driver event suppression */
	uint64_t device_gpa;      /* split: used ring; packed: device event suppression */
	/* Where to resume (vhost-user SET_VRING_BASE). Split: the avail index (usually 0).
	 * Packed: ring position in bits 0-14 and the wrap counter in bit 15 (initially
	 * VL_PACKED_WRAP_BIT: position 0, wrap counter 1). */
	uint16_t last_avail_idx;
	/* Packed only: the device's used position, same encoding. Split ignores it (the used
	 * index restarts at last_avail_idx: everything consumed was returned). */
	uint16_t last_used_idx;
	uint32_t batch_threshold; /* copies of at most this many bytes are batched; 0 = off */
};

/* Fill cfg with defaults for a queue of `size` entries (batching at the default threshold). */
void vl_vq_config_init(struct vl_vq_config *cfg, enum vl_layout layout, uint32_t size);
static inline uint32_t vl_vq_config_size(const struct vl_vq_config *cfg)
{
	return (uint32_t)cfg->size_minus_one + 1u;
}

/* Why a chain or packet was dropped, or a queue declared broken. Each is counted per queue. */
enum vl_drop {
	VL_DROP_NONE = 0,
	/* Chain-level: the chain is returned to the guest with used length 0 and skipped. */
	VL_DROP_CHAIN_LOOP,          /* more hops than the queue (or indirect table) size */
	VL_DROP_NEXT_OUT_OF_RANGE,   /* next >= queue size or >= indirect table entries */
	VL_DROP_NESTED_INDIRECT,     /* INDIRECT set inside an indirect table */
	VL_DROP_INDIRECT_LEN,        /* table length 0, not a multiple of 16, or > queue size entries */
	VL_DROP_INDIRECT_NOT_NEGOTIATED, /* INDIRECT used without VIRTIO_RING_F_INDIRECT_DESC */
	VL_DROP_INDIRECT_WITH_NEXT,  /* split: a descriptor with both INDIRECT and NEXT */
	VL_DROP_UNMAPPED,            /* some byte of a buffer (or table) lies in no region */
	VL_DROP_LEN_OVERFLOW,        /* buffer lengths sum past 4 GiB */
	VL_DROP_DIRECTION,           /* device-writable piece in a TX chain / read-only in RX */
	VL_DROP_TOO_MANY_PIECES,     /* more translated pieces than VL_CHAIN_MAX_PIECES */
	VL_DROP_SHORT_CHAIN,         /* TX chain no longer than the virtio-net header */
	/* TX virtio-net header offload fields (VIRTIO_NET_F_CSUM negotiated; docs/architecture.md,
	 * "Offload headers", names the rule each enforces): */
	VL_DROP_CSUM_PAST_FRAME,     /* NEEDS_CSUM: csum_start + csum_offset + 2 > packet length */
	VL_DROP_ECN_WITHOUT_GSO,     /* the GSO ECN bit on a packet without GSO */
	VL_DROP_GSO_UNKNOWN_TYPE,    /* gso_type not NONE, TCPV4, UDP, TCPV6 or UDP_L4 */
	VL_DROP_GSO_NOT_NEGOTIATED,  /* a GSO type whose HOST_* feature was not negotiated
				      * (TCPV4: HOST_TSO4, TCPV6: HOST_TSO6, UDP: HOST_UFO,
				      * UDP_L4: HOST_USO) */
	VL_DROP_ECN_NOT_NEGOTIATED,  /* GSO with the ECN bit, HOST_ECN not negotiated */
	VL_DROP_GSO_NO_SEGMENT_SIZE, /* GSO with gso_size 0: no segment size to cut at */
	VL_DROP_GSO_HDR_PAST_FRAME,  /* GSO with hdr_len longer than the packet */
	/* TX GSO checked against the frame itself (spec 5.1.6.2 and Linux's
	 * virtio_net_hdr_to_skb: what a segmenter will rely on must be there): */
	VL_DROP_GSO_WITHOUT_CSUM,    /* GSO without NEEDS_CSUM (spec 5.1.6.2.1: a driver
				      * asking for segmentation MUST ask for the checksum) */
	VL_DROP_GSO_BAD_FRAME,       /* GSO on a frame too short for the Ethernet, IP and
				      * TCP/UDP headers, or one that is not IPv4/IPv6 with TCP or
				      * UDP, or an IPv4 fragment */
	VL_DROP_GSO_PROTO_MISMATCH,  /* the frame's protocols are not the GSO type's (TCPV4:
				      * IPv4+TCP, TCPV6: IPv6+TCP, UDP_L4 and UDP: UDP) */
	VL_DROP_GSO_CSUM_MISMATCH,   /* GSO whose checksum request is not the L4 checksum:
				      * csum_start != the TCP/UDP header's offset, or csum_offset
				      * != 16 (TCP) / 6 (UDP) */
	VL_DROP_TX_TOO_BIG,          /* TX packet longer than VL_PKT_MAX_LEN */
	VL_DROP_RX_BUF_TOO_SMALL,    /* RX chain smaller than the virtio-net header */
	/* Packet-level (enqueue): the packet is not delivered, nothing of it is published. */
	VL_DROP_RX_TOO_BIG,          /* does not fit the guest buffer(s) it could use */
	VL_DROP_RX_TOO_MANY_PIECES,  /* would need more pieces than the queue can track */
	/* Packet-level (enqueue), offloads the receiving driver did not negotiate
	 * (vl_net_rx_offload_check; vl_sw_fit makes such a packet fit): */
	VL_DROP_RX_CSUM_NOT_NEGOTIATED, /* NEEDS_CSUM or DATA_VALID without GUEST_CSUM */
	VL_DROP_RX_FLAGS_UNKNOWN,    /* a header flag other than NEEDS_CSUM and DATA_VALID */
	VL_DROP_RX_GSO_NOT_NEGOTIATED, /* a GSO type (or the ECN bit) the driver did not
				      * accept: TCPV4 needs GUEST_TSO4, TCPV6 GUEST_TSO6, UDP
				      * GUEST_UFO, UDP_L4 both GUEST_USO4 and GUEST_USO6, ECN
				      * GUEST_ECN and a type; an unknown type never goes */
	VL_DROP_RX_GSO_NO_SEGMENT_SIZE, /* a GSO type with gso_size 0 */
	/* Queue-level: the queue is declared broken and stops (see vl_vq_broken). */
	VL_DROP_AVAIL_IDX_JUMP,      /* avail->idx claims more than queue size new entries */
	VL_DROP_HEAD_OUT_OF_RANGE,   /* avail ring names a head >= queue size */
	VL_DROP_ID_OUT_OF_RANGE,     /* packed: buffer id >= queue size */
	VL_DROP_CHAIN_INCOMPLETE,    /* packed: an available head whose chain runs into a
				      * descriptor that is not available (or wraps onto itself) */
	VL_DROP__COUNT
};

/* The constant name of a reason, e.g. "chain_loop". */
const char *vl_drop_name(enum vl_drop reason);

/* Most segments a zero-copy packet is made of: one per host-contiguous piece of its payload
 * (a Linux guest sends the linear part and up to 17 page fragments). A payload over more
 * pieces is copied (VL_ZC_FALLBACK_SCATTERED). */
#define VL_ZC_MAX_SEGS 32u

/* Why a dequeued packet was copied although zero-copy is on. */
enum vl_zc_fallback {
	VL_ZC_FALLBACK_SMALL = 0,    /* shorter than the zero-copy threshold */
	VL_ZC_FALLBACK_SCATTERED,    /* payload over more than VL_ZC_MAX_SEGS host-contiguous
				      * pieces, or the pool had no segments to describe them */
	VL_ZC_FALLBACK_LIMIT,        /* the bound on chains held by packets is reached */
	VL_ZC_FALLBACK__COUNT
};

const char *vl_zc_fallback_name(enum vl_zc_fallback reason);

/* Packet size classes of the size_bins statistics: <64, 64, 65-127, 128-255, 256-511,
 * 512-1023, 1024-1518, >1518 bytes. */
#define VL_SIZE_BINS 8u

/* How dequeue allocates packets (technique 4). AVAILABLE (the default): count the complete
 * chains available first and allocate exactly that many. BURST: allocate as many as the
 * caller asked for and free the unused ones afterwards (the old way, kept to measure). */
enum vl_alloc_policy {
	VL_ALLOC_AVAILABLE = 0,
	VL_ALLOC_BURST = 1,
};

/* Per-queue statistics. Counters only grow; the embedder reads them any time between bursts. */
struct vl_vq_stats {
	uint64_t packets;             /* delivered (enqueue) or produced (dequeue) */
	uint64_t bytes;               /* packet bytes, headers excluded */
	uint64_t chains;              /* chains consumed from the avail ring (good and bad) */
	uint64_t used_entries;        /* entries published in the used ring */
	uint64_t bursts;              /* burst calls */
	uint64_t empty_bursts;        /* burst calls that found nothing to do */
	uint64_t drops[VL_DROP__COUNT];
	uint64_t alloc_failures;      /* dequeue stopped because the pool could not supply */
	uint64_t alloc_calls;         /* bulk allocations of packet heads */
	uint64_t alloc_bufs;          /* packet heads allocated */
	uint64_t alloc_unused;        /* heads allocated but returned unused (BURST policy,
				       * dropped chains, a failure mid-burst) */
	uint64_t size_bins[VL_SIZE_BINS]; /* packets by size class */
	uint64_t zc_packets;          /* dequeued without copying the payload */
	uint64_t zc_fallbacks[VL_ZC_FALLBACK__COUNT];
	uint64_t zc_returned;         /* chains returned after their zero-copy packet was freed */
	uint64_t zc_stalls;           /* in-order bursts stopped: chains held up to the bound */
	uint64_t rx_no_room;          /* enqueue stopped: not enough guest buffers right now */
	uint64_t copies_batched;      /* small copies deferred to the burst flush (packed RX
				       * groups of four: done together once their four buffers
				       * are checked, rx_batched) */
	uint64_t copies_direct;       /* copies done at once (large, or batch array full) */
	uint64_t rx_hdrs_kept;        /* RX headers not stored: the buffer held those bytes
				       * already (a recycled buffer; its line stays shared) */
	uint64_t calls_needed;        /* bursts after which the guest asked to be notified */
	uint64_t calls_suppressed;    /* bursts that published but the guest wanted no call */
	uint64_t rx_bufs_wasted;      /* in-order RX: good buffers returned empty because a bad
				       * chain followed them inside one packet's reservation */
	uint64_t log_pages;           /* dirty-log page marks */
	uint64_t log_out_of_range;    /* guest writes beyond what the dirty log covers */
	uint64_t tx_write_ignored;    /* device-writable entries of packed indirect tables in TX
				       * chains, read anyway (DPDK 22.11's virtio-user marks its
				       * header entry so); anywhere else WRITE on TX is a drop.
				       * Counted per entry: a table may have more than one */
	uint64_t lines_evicted;       /* guest cache lines evicted after dequeue copied (or
				       * discard_touch read) them (vl_vq_set_evict_reads) */
	uint64_t payload_prefetches;  /* packets whose first line was asked for a few chains
				       * ahead of its read: one per chain of a burst's window that
				       * is one direct descriptor with header and first packet
				       * byte in one memory region and a packet dequeue copies at
				       * once (longer than batch_threshold; none with zero-copy
				       * on), or discard_touch reads (any) */
	uint64_t tx_line_waits;       /* packed guest-to-host bursts that left the chains of a
				       * descriptor line the driver was still filling for the
				       * next burst (vl_vq_set_tx_line_wait) */
	uint64_t copy_prefetches;     /* dequeue copies the batch deferred (copies_batched on a
				       * guest-to-host queue) whose source's first line was asked
				       * for as they were queued: every one while payload
				       * prefetch is on (vl_vq_set_tx_prefetch) */
	uint64_t rx_batched;          /* packed host-to-guest packets delivered in groups of
				       * four, each into one single descriptor, by the batch
				       * path (docs/architecture.md); the rest took the general
				       * path */
	uint64_t tx_batched;          /* packed guest-to-host chains taken four at a time (one
				       * line of descriptors, each a direct one-descriptor chain
				       * of a packet no longer than batch_threshold): counted in
				       * chains too */
};

struct vl_vq;

/* Create a queue over guest memory `mem` (which must outlive the queue or be replaced with
 * vl_vq_set_mem). Validates the size and that each ring area is aligned and contiguous in
 * host memory. Returns NULL and a vl_err code in *err on failure. Control path (allocates). */
struct vl_vq *vl_vq_create(const struct vl_mem *mem, const struct vl_vq_config *cfg, int *err);
void vl_vq_destroy(struct vl_vq *vq);

/* Replace the memory table between bursts (vhost-user SET_MEM_TABLE). Ring pointers are
 * re-translated; on error the queue keeps the old table and returns a vl_err code. */
int vl_vq_set_mem(struct vl_vq *vq, const struct vl_mem *mem);

/* Change the batching threshold at run time (0 = off). */
void vl_vq_set_batch_threshold(struct vl_vq *vq, uint32_t threshold);

uint32_t vl_vq_size(const struct vl_vq *vq);
/* The configuration the queue runs with now: layout, size, features and ring addresses as
 * created, the batch threshold as last set, and last_avail_idx / last_used_idx at the
 * queue's current positions (as vl_vq_last_avail / vl_vq_last_used encode them), so a new
 * queue created from it resumes where this one is. */
void vl_vq_get_config(const struct vl_vq *vq, struct vl_vq_config *out);
uint64_t vl_vq_features(const struct vl_vq *vq);
/* Index of the next avail entry the device will consume (vhost-user GET_VRING_BASE).
 * Packed: position in bits 0-14, wrap counter in bit 15. */
uint16_t vl_vq_last_avail(const struct vl_vq *vq);
/* Packed: the next used position and wrap counter, same encoding; split: used->idx. */
uint16_t vl_vq_last_used(const struct vl_vq *vq);

/* A broken queue refuses all further work; the reason is one of the queue-level drops. */
bool vl_vq_broken(const struct vl_vq *vq);
enum vl_drop vl_vq_broken_reason(const struct vl_vq *vq);

/* True when the last burst published used entries and the guest wants a notification for
 * them: split without event idx, avail->flags lacks NO_INTERRUPT; split with event idx,
 * used_event was passed (spec 2.7.7.2, 16-bit wrap-around); packed, the driver event
 * suppression area says ENABLE, or DESC and the named descriptor was used. The embedder
 * signals the guest (call eventfd) when this is true. */
bool vl_vq_needs_call(const struct vl_vq *vq);

/* Whether the device wants the guest to notify it of new buffers. true (the default):
 * the guest kicks; false: the device polls, the guest may skip kicks (split: NO_NOTIFY, or
 * a stale avail_event with event idx; packed: DISABLE). Written to guest memory at once, and
 * kept current at the end of every burst (avail_event / the device area name the next entry
 * the device will look at). After turning kicks back on, run one more burst before sleeping:
 * buffers posted while kicks were off produced no kick. Turning them on ends with a full
 * memory barrier, so that burst's read of the guest's index cannot pass the wish. */
void vl_vq_set_kicks(struct vl_vq *vq, bool want);

/* Zero-copy dequeue (technique 3), off by default. With it on, a TX packet of at least
 * min_len bytes whose payload is one run of host-contiguous guest memory is not copied: the
 * packet's data points into the guest buffer (read it, never write it), and the chain goes
 * back to the guest only when the packet's last reference is dropped -- at the next burst
 * on this queue (or vl_vq_complete). Without IN_ORDER chains come back in the order their
 * packets are freed; with IN_ORDER in the order they were made available, so a held packet
 * delays the chains behind it. The bound max_inflight counts ring descriptors, not chains:
 * the chains held at once occupy at most max_inflight descriptors of the ring (a direct
 * chain as many as it has, an indirect one the single descriptor that points at its table).
 * It is clamped to 1..queue size - 1 (0 reads as 1; on a one-descriptor queue nothing is
 * held), so held packets never take the whole ring, however the guest shapes its chains.
 * A packet whose chain would pass the bound is copied and its chain returned in the same
 * burst (without IN_ORDER), or the burst stops before it (with IN_ORDER, where copied
 * chains queue behind held ones and count too), so the guest keeps the rest of its
 * descriptors.
 * Every zero-copy packet must be freed before vl_vq_destroy, and guest memory must stay
 * mapped while one is alive. */
void vl_vq_set_zero_copy(struct vl_vq *vq, bool enable, uint32_t min_len, uint32_t max_inflight);
/* Chains currently held by zero-copy packets (or queued behind them under IN_ORDER). */
uint32_t vl_vq_zero_copy_held(const struct vl_vq *vq);
/* Ring descriptors those chains occupy: what the bound of vl_vq_set_zero_copy counts. */
uint32_t vl_vq_zero_copy_held_descs(const struct vl_vq *vq);
/* Return to the guest, now, every chain whose zero-copy packet was freed. */
void vl_vq_complete(struct vl_vq *vq);

void vl_vq_set_alloc_policy(struct vl_vq *vq, enum vl_alloc_policy policy);

/* Evict-after-read (docs/architecture.md), off by default. With it on, dequeue
 * evicts from every cache the first line of each piece of guest payload it copied, once the
 * burst's copies are done (x86 CLFLUSHOPT). A driver writes a packet's headers into that line
 * again when it reuses the buffer; if the device's read left a copy in the device's cache, the
 * driver's write must first invalidate it there. When the two CPUs sit far apart (another
 * core complex or socket) that costs the driver more than taking the line from memory, and
 * evicting it is worth the device's time; close together it is not (see vl_evict_tuner).
 * Returns VL_ERR_UNSUPPORTED, leaving it off, where the CPU or build has no CLFLUSHOPT.
 * Turning it off always succeeds. Only dequeue evicts (and vl_net_discard_touch, the line it
 * reads); what the packets hold is unchanged. */
int vl_vq_set_evict_reads(struct vl_vq *vq, bool enable);
bool vl_vq_evict_reads(const struct vl_vq *vq);
/* Whether vl_vq_set_evict_reads(vq, true) can succeed here (this CPU and build). */
bool vl_vq_evict_supported(void);

/* Payload prefetch (docs/architecture.md), on by default: a guest-to-host burst (dequeue,
 * vl_net_discard_touch) asks for each packet's first line about a dozen chains before it
 * reads it (counted in payload_prefetches), and a dequeue copy the batch defers asks for its
 * source's first line as it is queued (copy_prefetches). It pays when the driver's CPU is
 * far from the device's (the line comes from the driver's cache, hundreds of ns away) and
 * costs a few instructions a packet when they are close: an embedder that can measure may tune it as it
 * tunes evict-after-read (vl_evict_tuner; vhostlab serve --prefetch auto). A hint: what the
 * packets hold is unchanged. */
void vl_vq_set_tx_prefetch(struct vl_vq *vq, bool enable);
bool vl_vq_tx_prefetch(const struct vl_vq *vq);

/* Line wait (docs/architecture.md), off by default, packed rings only (a no-op on split). A
 * packed driver writes its descriptors one at a time, four to a 64-byte line, and the device
 * writes each used descriptor over the available one. When a guest-to-host burst (dequeue,
 * either discard) finds the driver's last available descriptor in the middle of a line, the
 * driver is most likely still filling that line: the burst leaves the chains that start in
 * it for the next burst instead of writing used descriptors into a line the driver then has
 * to take back (counted in tx_line_waits). Nothing waits long: a burst never leaves every
 * chain it found, so the next burst takes those left (it finds the driver gone on, or only
 * them). Against DPDK 22.11's virtio-user, 64-byte packets, it was worth a few per cent
 * (docs/architecture.md has the figures). */
void vl_vq_set_tx_line_wait(struct vl_vq *vq, bool enable);
bool vl_vq_tx_line_wait(const struct vl_vq *vq);

/* Whether evict-after-read pays, decided from the packet rate it gives. The embedder cannot
 * know where the driver's CPU sits (a hypervisor moves it), so the tuner measures: a trial
 * runs VL_EVICT_TRIAL_EPOCHS epochs of at least VL_EVICT_EPOCH_NS each, off and on in the
 * order off on on off off on (a steady drift in the rate favours neither), then holds the
 * winner for VL_EVICT_HOLD_EPOCHS epochs, or until an epoch's rate moves more than
 * VL_EVICT_SHIFT times away from the winner's in the trial, and tries again. Each trial that
 * gives the verdict the one before it gave doubles the next hold, up to
 * VL_EVICT_HOLD_MAX_EPOCHS: half a trial's epochs run the losing setting, which costs where
 * the verdict is plain, and what would change it (the CPUs moving, the traffic changing)
 * moves the rate, which ends a hold at once and starts the holds short again. On wins only if
 * each of the trial's three off/on pairs ran faster with it on and their median ratio reaches
 * VL_EVICT_MIN_GAIN: it costs the device time, so a tie keeps it off. A split verdict (the
 * median gain reached, one pair the other way: far apart, one 20 ms epoch's rate can swing by
 * more than the gain) is tried again at once, up to VL_EVICT_RETRIES times in a row, before
 * off is held. An epoch of a trial
 * with fewer than VL_EVICT_MIN_PACKETS packets (the driver is idle or slow: nothing to
 * measure) starts the trial over, off, so the first epochs with traffic decide. Feed it from
 * the poll loop; it only reads the clock you pass. */
#define VL_EVICT_EPOCH_NS 20000000ull /* 20 ms: 100 000 packets at 5 Mpps */
#define VL_EVICT_TRIAL_EPOCHS 6u
#define VL_EVICT_HOLD_EPOCHS 50u      /* about a second between trials */
#define VL_EVICT_HOLD_MAX_EPOCHS 400u /* about 8 s: from the fourth like verdict in a row */
#define VL_EVICT_MIN_GAIN 1.05
#define VL_EVICT_RETRIES 2u           /* split verdicts tried again in a row */
#define VL_EVICT_SHIFT 1.3            /* far apart, rates are about half of close */
#define VL_EVICT_MIN_PACKETS 2000u    /* per epoch: 100 000 packets/s */

struct vl_evict_tuner {
	bool on;                /* the decision to apply now */
	bool in_trial;
	uint32_t epoch;         /* epochs done in this trial or hold */
	uint32_t hold_epochs;   /* this hold's length (VL_EVICT_HOLD_EPOCHS, doubled per agreeing
				   verdict up to VL_EVICT_HOLD_MAX_EPOCHS) */
	bool decided;           /* a verdict was held since the start or the last shift: */
	bool held_on;           /* ... that one */
	uint64_t epoch_start_ns;
	uint64_t epoch_start_packets;
	double rate[VL_EVICT_TRIAL_EPOCHS]; /* packets per ns, per trial epoch */
	double hold_rate;       /* the winner's median epoch rate in the last trial */
	/* What it did, for the embedder's statistics. */
	uint64_t trials;        /* trials completed */
	uint64_t trials_on;     /* ... that turned eviction on */
	uint64_t trials_idle;   /* trials started over by an idle epoch after a measured one */
	double last_gain;       /* median on/off ratio of the last completed trial (0: none) */
	uint64_t shifts;        /* holds cut short by a rate that moved */
	uint64_t retries;       /* trials started at once after a split verdict */
	uint32_t retry_run;     /* split verdicts in a row, retried so far */
};

/* Start with eviction off and a trial at the first step. */
void vl_evict_tuner_init(struct vl_evict_tuner *t, uint64_t now_ns, uint64_t packets);
/* The same, for a queue that starts over (a front end reconnected): a new trial, off, with
 * the counters of what it did so far (trials, trials_on, trials_idle, shifts, retries,
 * last_gain) kept. */
void vl_evict_tuner_restart(struct vl_evict_tuner *t, uint64_t now_ns, uint64_t packets);
/* Account the packets the queue has moved so far (a running total, such as
 * vl_vq_stats()->chains, which vl_net_discard_touch counts too) at time now_ns; returns
 * whether eviction should be on from now.
 * Call it at least every few milliseconds while packets flow. */
bool vl_evict_tuner_step(struct vl_evict_tuner *t, uint64_t now_ns, uint64_t packets);

const struct vl_vq_stats *vl_vq_stats(const struct vl_vq *vq);

/* Dirty-page logging for live migration (vhost-user SET_LOG_BASE / VHOST_F_LOG_ALL): from
 * now on, every guest write this queue makes -- packet data and headers, used ring entries
 * and index, packed used descriptors, avail_event and the device event area -- sets bit
 * (gpa / 4096) of `bitmap` (bit n % 8 of byte n / 8), by atomic OR at the end of each burst.
 * `bytes` is the bitmap's size; writes to pages beyond it are counted (log_out_of_range),
 * not logged. NULL turns logging off. The bitmap must stay mapped while set. Call it on
 * every queue of a device. */
void vl_vq_set_dirty_log(struct vl_vq *vq, uint8_t *bitmap, uint64_t bytes);

/* Inflight tracking (vhost-user INFLIGHT_SHMFD; QEMU docs/interop/vhost-user.rst, "Inflight
 * I/O tracking"). The front end keeps a region per queue across back-end restarts; the queue
 * marks in it every head it takes and clears the mark once the used ring returns it, so a
 * queue created after a crash takes first exactly the chains the old one had taken and not
 * returned -- which the guest's used index alone cannot tell once chains come back out of
 * order (zero-copy leases) -- in the order they were first taken, then continues with the
 * avail ring.
 *
 * vl_inflight_queue_bytes: the bytes one queue's region takes for `size` descriptors in
 * layout L (the spec's QueueRegionSplit / QueueRegionPacked, rounded up to 64).
 *
 * vl_vq_set_inflight: attach `region` (`bytes` long, shared memory that must stay mapped
 * while attached) to a split queue before its first burst. A region never used (version 0)
 * is initialised and the queue keeps its positions; one in use is recovered (the spec's
 * reconnect steps, every field read once and checked) and the queue resumes at the guest's
 * used index with *resubmit chains taken again first. VL_ERR_LAYOUT on a packed queue (not
 * tracked), VL_ERR_INFLIGHT for a region too small, of another ring size or version, or
 * whose last batch does not fit the ring, VL_ERR_NOMEM; the queue is then as it was. */
uint64_t vl_inflight_queue_bytes(enum vl_layout L, uint32_t size);
int vl_vq_set_inflight(struct vl_vq *vq, void *region, uint64_t bytes, uint32_t *resubmit);

/* ---- the queue gate: queues over threads (see the head of this file) ----------------- */

struct vl_vq_gate;

/* A gate between one owner thread and the control thread; NULL when out of memory. Control
 * path (allocates). Destroy it only after the owner left or was joined. */
struct vl_vq_gate *vl_vq_gate_create(void);
void vl_vq_gate_destroy(struct vl_vq_gate *g);

/* Owner, at a burst boundary: when a pause was asked, acknowledge it, wait until the control
 * thread resumes it and return true (then re-read every queue pointer); else return false at
 * the cost of one load. */
bool vl_vq_gate_poll(struct vl_vq_gate *g);
/* Owner: a pause was asked and not acknowledged yet (check before sleeping). */
bool vl_vq_gate_pending(const struct vl_vq_gate *g);
/* Owner: it will never run bursts again; every pause from now on is granted at once. */
void vl_vq_gate_leave(struct vl_vq_gate *g);

/* Control: ask for a pause and return its number (the owner stops at its next burst
 * boundary); wait until the owner stopped for it (or left); both at once. One control
 * thread per gate. */
uint32_t vl_vq_gate_request(struct vl_vq_gate *g);
void vl_vq_gate_wait(struct vl_vq_gate *g, uint32_t pause);
uint32_t vl_vq_gate_pause(struct vl_vq_gate *g);
/* Control: end pause `pause`; what the control thread did before is visible to the owner. */
void vl_vq_gate_resume(struct vl_vq_gate *g, uint32_t pause);

#ifdef __cplusplus
}
#endif
#endif

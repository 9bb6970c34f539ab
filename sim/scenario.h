/* SPDX-License-Identifier: MIT */
/* One scenario body, run over any configuration: the simulated driver and the core exchange
 * packets both ways while every oracle is applied (byte equality, accounting, containment,
 * pool hygiene). `vhostlab run` and the scenario tests both call lab_scenario_run. */
#ifndef LAB_SCENARIO_H
#define LAB_SCENARIO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "guest_mem.h"
#include "traffic.h"
#include "vhostlab/vl_vq.h"

struct lab_recorder;

#define LAB_MAX_SIZES 32u

/* Allocation faults the lab injects into the pool dequeue allocates from. */
enum lab_faults {
	LAB_FAULTS_NONE = 0,
	LAB_FAULTS_NTH,      /* every 7th allocation call fails */
	LAB_FAULTS_PROB,     /* each allocation call fails with probability 1/10 */
	LAB_FAULTS_SCARCE,   /* the pool is nearly empty: a few packets' worth of buffers */
	LAB_FAULTS__COUNT
};

const char *lab_faults_name(enum lab_faults f);

struct lab_scenario_config {
	enum vl_layout layout;     /* split or packed ring */
	bool in_order;             /* negotiate VIRTIO_F_IN_ORDER */
	bool event_idx;            /* negotiate VIRTIO_RING_F_EVENT_IDX */
	bool mergeable;            /* negotiate VIRTIO_NET_F_MRG_RXBUF (+VERSION_1) */
	bool indirect;             /* negotiate and use indirect descriptors */
	bool modern;               /* negotiate VIRTIO_F_VERSION_1 (12-byte header even
				    * without mergeable buffers; num_buffers must be 1) */
	uint32_t batch_threshold;  /* core's small-copy threshold, 0 = off */
	uint64_t granularity;      /* guest RAM region size, 0 = coarse */
	uint32_t queue_size;
	uint32_t burst;            /* packets per host burst */
	uint64_t packets;          /* per direction */
	uint32_t sizes[LAB_MAX_SIZES];
	uint32_t nsizes;
	uint64_t seed;
	uint32_t containment_every; /* half-full host bursts between whole-memory checks
	                             * (0 = never; see scan_due) */
	uint32_t containment_max;  /* at most this many of them in a run, 0 = no bound (the
				    * fuzz target's short runs: a scan costs more than their
				    * packets) */
	bool zero_copy;            /* zero-copy dequeue on; the host holds some packets for up
				    * to 20 rounds and frees them in random order */
	bool dirty_log;            /* dirty-page log on both queues, checked on every scan */
	bool evict;                /* evict-after-read on the TX queue: the run fails where
				    * vl_vq_evict_supported() is false */
	enum lab_faults faults;
	/* The offload features the driver negotiates (traffic.h), hence the traffic: the guest
	 * sends checksum-offload and GSO frames as they allow, the host sends what a side that
	 * offloads one step more sends, and makes it fit the driver where it must. */
	enum lab_offload offload;
	/* Record the run as a trace (scenario_record.h); the result's `recorder` holds it. */
	bool record;
	/* Guest memory the caller keeps across runs, or NULL (the run creates its own from
	 * lab_scenario_gmem_config). It must be fresh (new, or lab_gmem_reset since its last
	 * run), have the configuration's granularity and at least the RAM and ring area that
	 * function asks for; its host placement is its own, not the seed's. The fuzz target
	 * runs thousands of short runs a second, and creating the memory cost more than one.
	 * The run leaves it allocated-from and written; it does not destroy it. */
	struct lab_gmem *gmem;
	/* Called now and then with progress; may be NULL. */
	void (*progress)(void *ctx, uint64_t tx_done, uint64_t rx_done, uint64_t total);
	void *progress_ctx;
};

/* The guest memory a run of cfg creates (lab_scenario_run with cfg->gmem NULL). */
void lab_scenario_gmem_config(const struct lab_scenario_config *cfg, struct lab_gmem_config *gc);

struct lab_scenario_result {
	bool ok;
	char error[1024];            /* first failure, with configuration context */
	uint32_t hdr_len;
	uint64_t features;           /* what the driver negotiated */
	uint64_t tx_packets, rx_packets, tx_bytes, rx_bytes;
	uint64_t checks;            /* individual oracle checks that passed */
	uint64_t containment_scans;
	/* Translations the core made that the door check (door_check.h) looked at: none may
	 * write where the driver granted only reads. */
	uint64_t door_checks;
	/* Notifications, both queues: calls the guest's own reckoning said were due, calls the
	 * core signalled that were not due (spurious; a due call not signalled fails the run),
	 * and kicks the guest sent / skipped because the device was polling. */
	uint64_t calls_due, calls_spurious, kicks_sent, kicks_skipped;
	/* Dirty log: changed pages found marked (a changed page not marked fails the run), and
	 * pages marked that did not change (rewrites of equal bytes; reported). */
	uint64_t log_pages_checked, log_clean_marks;
	uint64_t held_max;         /* most zero-copy packets the host held at once */
	/* Shapes at the limits the driver posted, both queues (net_driver.h): chains with the
	 * most descriptors the core accepts (of them through an indirect table), and buffers,
	 * headers and tables ending on a RAM region's last byte / starting on its first. */
	uint64_t limit_chains, limit_chains_indirect, region_end_buffers, region_start_buffers;
	/* Offloaded traffic. TX: GSO frames dequeued and segmented with vl_sw_segment (the
	 * longest), NEEDS_CSUM packets dequeued, TX chains posted in Linux's shape. RX: GSO
	 * frames the guest received whole (the longest), frames it received with NEEDS_CSUM,
	 * host packets made fit with vl_sw_fit, big receive buffers posted. Both ways: frames
	 * cut by the core compared byte for byte with the model's (TX segments and the frames
	 * of RX fits), checksums completed by the core and compared with the model's (TX
	 * vl_sw_csum_complete, RX fits), frames whose checksums were verified as a receiving
	 * stack verifies them. */
	uint64_t gso_tx_packets, gso_tx_max, csum_tx_packets, linux_chains;
	uint64_t gso_rx_packets, gso_rx_max, csum_rx_packets, rx_fitted, big_rx_buffers;
	uint64_t segments_checked, csum_completed, csum_verified;
	double seconds;
	struct vl_vq_stats tx_stats, rx_stats;
	/* With cfg->record: the recording (lab_rec_trace), owned by the caller, who frees it
	 * with lab_rec_destroy. NULL when recording could not start. */
	struct lab_recorder *recorder;
};

/* Fill cfg with the default workload for one configuration. */
void lab_scenario_defaults(struct lab_scenario_config *cfg);

/* Run one configuration. Returns 0 when every oracle held, -1 otherwise (res->error says
 * which oracle, packet and values). */
int lab_scenario_run(const struct lab_scenario_config *cfg, struct lab_scenario_result *res);

/* "mergeable=on indirect=off batch=256 granularity=4096 seed=1" */
void lab_scenario_describe(const struct lab_scenario_config *cfg, char *buf, size_t len);

#endif

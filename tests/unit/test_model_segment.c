/* SPDX-License-Identifier: MIT */
/* The reference model's software offloads (sim/model_segment.h), which the scenario runner
 * compares the core's against frame by frame: first against values worked out here by hand
 * from the RFCs (lengths, identifications, sequence numbers, flags, checksums that verify),
 * then against the core's vl_sw_segment and vl_sw_csum_complete on frames of every kind the
 * lab sends, byte for byte; and the model's fit decisions and refusals. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "frame_build.h"
#include "model_segment.h"
#include "vhostlab/vhostlab.h"

#define MAXF 70000u
#define MAXN 160u
#define MBUF (MAXF + MAXN * 140u)

static uint8_t frame[MAXF], mbuf[MBUF], core[MAXF];
static struct lab_mframe fr[MAXN];

static uint32_t get16(const uint8_t *p)
{
	return (uint32_t)p[0] << 8 | p[1];
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* sp's frame, partial checksum, with the offloads a driver sends for it. */
static uint32_t build(const struct lab_frame_spec *sp, uint16_t gso, bool ecn,
		      struct lab_frame_layout *lay, struct vl_offload *ol)
{
	const uint32_t len = lab_frame_build(sp, true, frame, MAXF, lay);

	assert_int_not_equal(len, 0);
	lab_frame_offload(sp, lay, gso, ecn, ol);
	return len;
}

/* ---- against the RFCs, by hand --------------------------------------------------------- */

static void test_tcpv4_fields(void **state)
{
	(void)state;
	/* ACK, PSH, FIN and CWR; 2500 bytes at 1000 a frame: 1000, 1000, 500. The sequence
	 * number wraps after the first frame, the identification after the first too. */
	const struct lab_frame_spec sp = {.ip_opt_words = 2, .tcp_opt_words = 3,
					  .tcp_flags = 0x99, .ip_id = 0xffff,
					  .seq = 0xfffffff0u, .payload = 2500, .seed = 3};
	struct lab_frame_layout lay;
	struct vl_offload ol;
	const uint32_t len = build(&sp, 1000, true, &lay, &ol);
	uint32_t n = 0;
	static const uint32_t chunk[3] = {1000, 1000, 500};
	static const uint32_t seq[3] = {0xfffffff0u, 984u, 1984u};  /* + 1000 mod 2^32 */
	static const uint32_t id[3] = {0xffff, 0x0000, 0x0001};
	static const uint8_t flags[3] = {0x90, 0x10, 0x19};          /* CWR first, FIN PSH last */

	assert_int_equal(lay.l3, 14);
	assert_int_equal(lay.l4, 14 + 28);
	assert_int_equal(lay.hdr_len, 14 + 28 + 32);
	assert_int_equal(lab_model_segment(frame, len, &ol, mbuf, MBUF, fr, MAXN, &n), LAB_MSEG_OK);
	assert_int_equal(n, 3);
	for (uint32_t i = 0; i < 3; i++) {
		const uint8_t *f = mbuf + fr[i].off;

		assert_int_equal(fr[i].len, lay.hdr_len + chunk[i]);
		assert_int_equal(get16(f + 14 + 2), 28 + 32 + chunk[i]);   /* IPv4 total length */
		assert_int_equal(get16(f + 14 + 4), id[i]);
		assert_int_equal(get32(f + lay.l4 + 4), seq[i]);
		assert_int_equal(f[lay.l4 + 13], flags[i]);
		/* Everything else in the headers is the original's. */
		assert_memory_equal(f, frame, 14 + 2);
		assert_memory_equal(f + 14 + 6, frame + 14 + 6, 4);         /* to the checksum */
		assert_memory_equal(f + 14 + 12, frame + 14 + 12, 16);      /* addresses, options */
		assert_memory_equal(f + lay.l4, frame + lay.l4, 4);         /* ports */
		assert_memory_equal(f + lay.l4 + 8, frame + lay.l4 + 8, 5); /* ack, offset */
		assert_memory_equal(f + lay.l4 + 14, frame + lay.l4 + 14, 2);
		assert_memory_equal(f + lay.l4 + 18, frame + lay.l4 + 18, lay.hdr_len - lay.l4 - 18);
		assert_memory_equal(f + lay.hdr_len, frame + lay.hdr_len + 1000 * i, chunk[i]);
		assert_int_equal(lab_frame_csum_check(f, fr[i].len), 1);
		assert_int_equal(fr[i].ol.flags | fr[i].ol.gso_type | fr[i].ol.gso_size, 0);
	}
	assert_int_equal(fr[1].off, fr[0].len);
	assert_int_equal(fr[2].off, fr[0].len + fr[1].len);
}

static void test_udp_v6_fields(void **state)
{
	(void)state;
	/* IPv6 behind a VLAN tag; 3000 bytes at 1200: 1200, 1200, 600. */
	const struct lab_frame_spec sp = {.ipv6 = true, .udp = true, .vlan = true,
					  .payload = 3000, .seed = 4};
	struct lab_frame_layout lay;
	struct vl_offload ol;
	const uint32_t len = build(&sp, 1200, false, &lay, &ol);
	uint32_t n = 0;
	static const uint32_t chunk[3] = {1200, 1200, 600};

	assert_int_equal(ol.gso_type, VL_NET_HDR_GSO_UDP_L4);
	assert_int_equal(lab_model_segment(frame, len, &ol, mbuf, MBUF, fr, MAXN, &n), LAB_MSEG_OK);
	assert_int_equal(n, 3);
	for (uint32_t i = 0; i < 3; i++) {
		const uint8_t *f = mbuf + fr[i].off;

		assert_int_equal(fr[i].len, 18 + 40 + 8 + chunk[i]);
		assert_int_equal(get16(f + 18 + 4), 8 + chunk[i]);          /* payload length */
		assert_int_equal(get16(f + 18 + 40 + 4), 8 + chunk[i]);     /* UDP length */
		assert_memory_equal(f + 18 + 8, frame + 18 + 8, 32);        /* addresses */
		assert_int_equal(lab_frame_csum_check(f, fr[i].len), 1);
	}
}

/* A payload that is a whole number of segments leaves no short last frame; one with no
 * payload at all is one frame of headers, its flags whole. */
static void test_exact_and_empty(void **state)
{
	(void)state;
	struct lab_frame_spec sp = {.tcp_flags = 0x19, .payload = 3000, .seed = 5};
	struct lab_frame_layout lay;
	struct vl_offload ol;
	uint32_t len = build(&sp, 1000, false, &lay, &ol), n = 0;

	assert_int_equal(lab_model_segment(frame, len, &ol, mbuf, MBUF, fr, MAXN, &n), LAB_MSEG_OK);
	assert_int_equal(n, 3);
	assert_int_equal(fr[2].len, lay.hdr_len + 1000);
	sp.payload = 0;
	len = build(&sp, 1000, false, &lay, &ol);
	assert_int_equal(lab_model_segment(frame, len, &ol, mbuf, MBUF, fr, MAXN, &n), LAB_MSEG_OK);
	assert_int_equal(n, 1);
	assert_int_equal(fr[0].len, lay.hdr_len);
	assert_int_equal(mbuf[lay.l4 + 13], 0x19);
	assert_int_equal(lab_frame_csum_check(mbuf, fr[0].len), 1);
}

/* ---- against the core ------------------------------------------------------------------ */

/* Segment sp's frame with the core (a pool of 1000-byte buffers: frames chained at odd
 * offsets) and with the model; every frame the same, byte for byte. */
static void same_as_core(const struct lab_frame_spec *sp, uint16_t gso, bool ecn)
{
	struct lab_frame_layout lay;
	struct vl_offload ol;
	const uint32_t len = build(sp, gso, ecn, &lay, &ol);
	struct vl_pool *pool = vl_pool_create(512, 1000);
	struct vl_pkt *p = vl_pkt_alloc_len(pool, len), *out[MAXN];
	uint16_t cn = 0;
	uint32_t mn = 0;

	vl_pkt_write(p, 0, frame, len);
	p->ol = ol;
	assert_int_equal(vl_sw_segment(p, pool, out, MAXN, &cn), VL_SW_OK);
	assert_int_equal(lab_model_segment(frame, len, &ol, mbuf, MBUF, fr, MAXN, &mn), LAB_MSEG_OK);
	assert_int_equal(cn, mn);
	for (uint32_t i = 0; i < mn; i++) {
		assert_int_equal(out[i]->pkt_len, fr[i].len);
		assert_int_equal(vl_pkt_read(out[i], 0, core, fr[i].len), fr[i].len);
		assert_memory_equal(core, mbuf + fr[i].off, fr[i].len);
		assert_int_equal(lab_frame_csum_check(core, fr[i].len), 1);
	}
	vl_pkt_free_bulk(out, cn);
	vl_pkt_free(p);
	assert_int_equal(vl_pool_destroy(pool), 0);
}

static void test_segment_like_core(void **state)
{
	(void)state;
	const struct lab_frame_spec specs[] = {
		{.tcp_flags = 0x18, .payload = 5000, .seed = 11, .payload_stream = true},
		{.vlan = true, .ip_opt_words = 10, .tcp_opt_words = 10, .tcp_flags = 0x99,
		 .ip_id = 0xfffe, .seq = 0xffffff00u, .payload = 65535 - 138, .seed = 12,
		 .payload_stream = true},
		{.ipv6 = true, .tcp_flags = 0x11, .seq = 7, .payload = 1460, .seed = 13},
		{.ipv6 = true, .tcp_opt_words = 3, .tcp_flags = 0x10, .payload = 65535 - 86,
		 .seed = 14, .payload_stream = true},
		{.udp = true, .ip_opt_words = 1, .payload = 4001, .seed = 15},
		{.udp = true, .ipv6 = true, .vlan = true, .payload = 60000, .seed = 16,
		 .payload_stream = true},
		{.tcp_flags = 0x10, .payload = 1, .seed = 17},
	};
	const uint16_t gso[] = {1448, 536, 1460, 1000, 1472, 1232, 1460};
	const bool ecn[] = {false, true, false, true, false, false, false};

	for (uint32_t i = 0; i < sizeof(gso) / sizeof(gso[0]); i++)
		same_as_core(&specs[i], gso[i], ecn[i]);
}

/* Completion: the model's and the core's agree, and match the frame built complete. */
static void test_csum_complete_like_core(void **state)
{
	(void)state;
	const struct lab_frame_spec specs[] = {
		{.tcp_flags = 0x18, .payload = 999, .seed = 21},
		{.ipv6 = true, .udp = true, .payload = 1500, .seed = 22},
		{.vlan = true, .udp = true, .ip_opt_words = 3, .payload = 61, .seed = 23},
	};

	for (uint32_t k = 0; k < 3; k++) {
		struct lab_frame_layout lay;
		struct vl_offload ol;
		const uint32_t len = build(&specs[k], 0, false, &lay, &ol);
		struct vl_pool *pool = vl_pool_create(8, 333);
		struct vl_pkt *p = vl_pkt_alloc_len(pool, len);

		vl_pkt_write(p, 0, frame, len);
		p->ol = ol;
		assert_int_equal(vl_sw_csum_complete(p), VL_SW_OK);
		assert_int_equal(lab_model_csum_complete(frame, len, &ol), LAB_MSEG_OK);
		vl_pkt_read(p, 0, core, len);
		assert_memory_equal(core, frame, len);
		assert_int_equal(lab_frame_csum_check(frame, len), 1);
		lab_frame_build(&specs[k], false, core, MAXF, &lay);
		assert_memory_equal(core, frame, len);
		vl_pkt_free(p);
		assert_int_equal(vl_pool_destroy(pool), 0);
	}
}

/* ---- fit and refusals ----------------------------------------------------------------- */

static void test_fit(void **state)
{
	(void)state;
	const uint64_t csum = VL_FEATURE(VL_F_NET_CSUM) | VL_FEATURE(VL_F_NET_GUEST_CSUM);
	const uint64_t tso = csum | VL_FEATURE(VL_F_NET_GUEST_TSO4) | VL_FEATURE(VL_F_NET_GUEST_TSO6);
	const struct lab_frame_spec sp = {.tcp_flags = 0x18, .payload = 3000, .seed = 31};
	struct lab_frame_layout lay;
	struct vl_offload ol;
	uint32_t len = build(&sp, 1000, false, &lay, &ol), n = 9;

	/* A driver with TSO takes the GSO frame; one without gets the segments. */
	assert_int_equal(lab_model_fit(tso, frame, len, &ol, mbuf, MBUF, fr, MAXN, &n),
			 LAB_MSEG_AS_IS);
	assert_int_equal(n, 0);
	assert_int_equal(lab_model_fit(csum, frame, len, &ol, mbuf, MBUF, fr, MAXN, &n),
			 LAB_MSEG_OK);
	assert_int_equal(n, 3);
	/* Checksum offload alone: taken with GUEST_CSUM; without, one copy completed, its flags
	 * cleared, its other fields kept. */
	len = build(&sp, 0, false, &lay, &ol);
	ol.hdr_len = 7;
	assert_int_equal(lab_model_fit(csum, frame, len, &ol, mbuf, MBUF, fr, MAXN, &n),
			 LAB_MSEG_AS_IS);
	assert_int_equal(lab_model_fit(0, frame, len, &ol, mbuf, MBUF, fr, MAXN, &n), LAB_MSEG_OK);
	assert_int_equal(n, 1);
	assert_int_equal(fr[0].len, len);
	assert_int_equal(fr[0].ol.flags, 0);
	assert_int_equal(fr[0].ol.csum_start, ol.csum_start);
	assert_int_equal(fr[0].ol.hdr_len, 7);
	assert_int_equal(lab_frame_csum_check(mbuf, len), 1);
	/* DATA_VALID to a driver without GUEST_CSUM: the same bytes, no flags. */
	lab_frame_build(&sp, false, frame, MAXF, &lay);
	ol = (struct vl_offload){.flags = VL_NET_HDR_F_DATA_VALID};
	assert_int_equal(lab_model_fit(0, frame, len, &ol, mbuf, MBUF, fr, MAXN, &n), LAB_MSEG_OK);
	assert_memory_equal(mbuf, frame, len);
	assert_int_equal(fr[0].ol.flags, 0);
}

static void test_refusals(void **state)
{
	(void)state;
	const struct lab_frame_spec tcp = {.tcp_flags = 0x10, .payload = 3000, .seed = 41};
	const struct lab_frame_spec udp = {.udp = true, .payload = 3000, .seed = 42};
	struct lab_frame_layout lay;
	struct vl_offload ol;
	uint32_t len = build(&tcp, 1000, false, &lay, &ol), n;
	struct vl_offload bad = ol;

	bad.gso_size = 0;
	assert_int_equal(lab_model_segment(frame, len, &bad, mbuf, MBUF, fr, MAXN, &n), LAB_MSEG_BAD);
	bad = ol;
	bad.gso_type = VL_NET_HDR_GSO_TCPV6;     /* the frame is IPv4 */
	assert_int_equal(lab_model_segment(frame, len, &bad, mbuf, MBUF, fr, MAXN, &n), LAB_MSEG_BAD);
	bad.gso_type = VL_NET_HDR_GSO_UDP_L4;    /* and TCP */
	assert_int_equal(lab_model_segment(frame, len, &bad, mbuf, MBUF, fr, MAXN, &n), LAB_MSEG_BAD);
	assert_int_equal(lab_model_segment(frame, len, &ol, mbuf, MBUF, fr, 2, &n), LAB_MSEG_ROOM);
	assert_int_equal(n, 0);
	assert_int_equal(lab_model_segment(frame, 40, &ol, mbuf, MBUF, fr, MAXN, &n), LAB_MSEG_BAD);
	len = build(&udp, 1000, false, &lay, &ol);
	bad = ol;
	bad.gso_type = VL_NET_HDR_GSO_UDP;       /* UFO: fragmentation, not segmentation */
	assert_int_equal(lab_model_segment(frame, len, &bad, mbuf, MBUF, fr, MAXN, &n), LAB_MSEG_BAD);
	bad.gso_type = VL_NET_HDR_GSO_UDP_L4 | VL_NET_HDR_GSO_ECN;
	assert_int_equal(lab_model_segment(frame, len, &bad, mbuf, MBUF, fr, MAXN, &n), LAB_MSEG_BAD);
	bad = ol;
	bad.csum_offset = (uint16_t)(len - ol.csum_start - 1);  /* the field past the end */
	assert_int_equal(lab_model_csum_complete(frame, len, &bad), LAB_MSEG_BAD);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tcpv4_fields),
		cmocka_unit_test(test_udp_v6_fields),
		cmocka_unit_test(test_exact_and_empty),
		cmocka_unit_test(test_segment_like_core),
		cmocka_unit_test(test_csum_complete_like_core),
		cmocka_unit_test(test_fit),
		cmocka_unit_test(test_refusals),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: MIT */
/* Datapath seeds: one input per hostile-guest class the datapath targets must survive
 * (loop, next out of range, head >= size, avail index jump, nested indirect, bad indirect
 * length, unmapped range, region straddle, header over three descriptors, short chain,
 * zero-length descriptors, length overflow, the TX size limit, wrong direction, bad offload;
 * packed lies), for the target's layout and direction. */
#include <string.h>

#include "frame_build.h"
#include "gen_corpus.h"

void gen_dp_hostile(const char *target, bool packed, bool rx)
{
	struct seed sd;
	struct fz_dp_setup s;
	const uint16_t W = rx ? VL_DESC_F_WRITE : 0;

	/* loop: a -> b -> a, and c -> c. */
	s = base_setup(packed, rx);
	seed_begin(&sd, packed, rx, &s);
	if (packed) {
		/* A packed chain cannot loop through next fields: the nearest thing is a chain
		 * whose NEXT runs around the whole ring. */
		for (uint16_t i = 0; i < 16; i++)
			desc_ram(&sd, i, (uint16_t)(i * 64), 64, (uint16_t)(W | PAV | VL_DESC_F_NEXT),
				 1);
	} else {
		desc_ram(&sd, 0, 0x000, 16, (uint16_t)(W | VL_DESC_F_NEXT), 1);
		desc_ram(&sd, 1, 0x010, 16, (uint16_t)(W | VL_DESC_F_NEXT), 0);
		desc_ram(&sd, 2, 0x020, 16, (uint16_t)(W | VL_DESC_F_NEXT), 2);
		fz_enc_avail(&sd.o, 0);
		avail(&sd, 2);
	}
	good_then_burst(&sd, 0x1000);
	save_dp(target, "hostile-loop", &sd);

	/* loop inside an indirect table. */
	s = base_setup(packed, rx);
	seed_begin(&sd, packed, rx, &s);
	for (uint16_t i = 0; i < 3; i++) {
		fz_enc_table_head(&sd.o, (uint16_t)(0x2000 + 16 * i));
		fz_enc_addr_ram(&sd.o, (uint16_t)(0x100 * i));
		fz_enc_len(&sd.o, 32);
		fz_enc_desc_tail(&sd.o, (uint16_t)(W | VL_DESC_F_NEXT), (uint16_t)(i == 2 ? 1 : i + 1));
	}
	fz_enc_desc_head(&sd.o, 0);
	fz_enc_addr_ram(&sd.o, 0x2000);
	fz_enc_len(&sd.o, 48);
	fz_enc_desc_tail(&sd.o, (uint16_t)(VL_DESC_F_INDIRECT | (packed ? PAV : 0)), 0);
	MAKE_AVAIL(&sd, 1, 0);
	good_then_burst(&sd, 0x3000);
	save_dp(target, "hostile-loop-indirect", &sd);

	/* next out of range (split) / a NEXT chain into a descriptor never made available
	 * (packed: incomplete chain). */
	s = base_setup(packed, rx);
	seed_begin(&sd, packed, rx, &s);
	if (packed) {
		desc_ram(&sd, 0, 0, 200, (uint16_t)(W | PAV | VL_DESC_F_NEXT), 0);
		burst(&sd);
		save_dp(target, "hostile-packed-incomplete-chain", &sd);
	} else {
		desc_ram(&sd, 0, 0, 200, (uint16_t)(W | VL_DESC_F_NEXT), 200);
		avail(&sd, 0);
		good_then_burst(&sd, 0x1000);
		save_dp(target, "hostile-next-out-of-range", &sd);
	}

	/* head >= queue size (split) / buffer id >= queue size (packed). */
	s = base_setup(packed, rx);
	seed_begin(&sd, packed, rx, &s);
	good_post(&sd, 0, 100, 0);
	if (packed) {
		desc_ram(&sd, 1, 0x1000, 200, (uint16_t)(W | PAV), 999);
		burst(&sd);
		burst(&sd);
		save_dp(target, "hostile-packed-id-out-of-range", &sd);
	} else {
		avail(&sd, 999);
		burst(&sd);
		burst(&sd);
		save_dp(target, "hostile-head-out-of-range", &sd);
	}

	/* avail index jump (split) / used-looking head (packed). */
	s = base_setup(packed, rx);
	seed_begin(&sd, packed, rx, &s);
	if (packed) {
		good_post(&sd, 0, 100, 0);
		fz_enc_pflags(&sd.o, 0, FZ_PFLAG_USED);
		burst(&sd);
		fz_enc_pflags(&sd.o, 0, FZ_PFLAG_AVAIL);
		burst(&sd);
		fz_enc_pflags(&sd.o, 1, FZ_PFLAG_OTHER);
		fz_enc_pflags(&sd.o, 2, FZ_PFLAG_CLEAR | FZ_PFLAG_NEXT);
		burst(&sd);
		save_dp(target, "hostile-packed-used-looking-head", &sd);
	} else {
		good_post(&sd, 0, 100, 0);
		fz_enc_force(&sd.o, 100);
		burst(&sd);
		save_dp(target, "hostile-avail-jump", &sd);
	}

	/* nested indirect. */
	s = base_setup(packed, rx);
	seed_begin(&sd, packed, rx, &s);
	fz_enc_table_head(&sd.o, 0x2000);
	fz_enc_addr_ram(&sd.o, 0x2100);
	fz_enc_len(&sd.o, 16);
	fz_enc_desc_tail(&sd.o, VL_DESC_F_INDIRECT, 0);
	fz_enc_desc_head(&sd.o, 0);
	fz_enc_addr_ram(&sd.o, 0x2000);
	fz_enc_len(&sd.o, 16);
	fz_enc_desc_tail(&sd.o, (uint16_t)(VL_DESC_F_INDIRECT | (packed ? PAV : 0)), 0);
	MAKE_AVAIL(&sd, 1, 0);
	good_then_burst(&sd, 0x3000);
	save_dp(target, "hostile-nested-indirect", &sd);

	/* bad indirect lengths: 0, not a multiple of 16, more entries than the queue; and
	 * INDIRECT together with NEXT; and INDIRECT without the feature. */
	static const uint32_t bad_lens[3] = {0, 15, 16 * 17};

	for (int k = 0; k < 5; k++) {
		static const char *const names[5] = {
			"hostile-indirect-len-zero", "hostile-indirect-len-odd",
			"hostile-indirect-len-too-many", "hostile-indirect-with-next",
			"hostile-indirect-not-negotiated",
		};

		s = base_setup(packed, rx);
		if (k == 4)
			s.features &= (uint8_t)~FZ_DPF_INDIRECT;
		seed_begin(&sd, packed, rx, &s);
		uint16_t fl = (uint16_t)(VL_DESC_F_INDIRECT | (packed ? PAV : 0));

		if (k == 3) {
			desc_ram(&sd, 0, 0x2000, 32, (uint16_t)(fl | VL_DESC_F_NEXT), 1);
			desc_ram(&sd, 1, 0x2100, 100, (uint16_t)(W | (packed ? PAV : 0)), 0);
		} else {
			desc_ram(&sd, 0, 0x2000, k < 3 ? bad_lens[k] : 32, fl, 0);
		}
		MAKE_AVAIL(&sd, k == 3 ? 2 : 1, 0);
		good_then_burst(&sd, 0x3000);
		save_dp(target, names[k], &sd);
	}

	/* unmapped ranges: the hole, far away, the end of RAM, and an indirect table in the
	 * hole. */
	s = base_setup(packed, rx);
	seed_begin(&sd, packed, rx, &s);
	{
		uint16_t pf = packed ? PAV : 0;

		fz_enc_desc_head(&sd.o, 0);
		fz_enc_addr_hole(&sd.o, 0x100);
		fz_enc_len(&sd.o, 100);
		fz_enc_desc_tail(&sd.o, (uint16_t)(W | pf), 0);
		fz_enc_desc_head(&sd.o, 1);
		fz_enc_addr_raw(&sd.o, 0xdead00000000ull);
		fz_enc_len(&sd.o, 100);
		fz_enc_desc_tail(&sd.o, (uint16_t)(W | pf), 1);
		fz_enc_desc_head(&sd.o, 2);
		fz_enc_addr_ram_end(&sd.o, 10);
		fz_enc_len(&sd.o, 100);
		fz_enc_desc_tail(&sd.o, (uint16_t)(W | pf), 2);
		fz_enc_desc_head(&sd.o, 3);
		fz_enc_addr_raw(&sd.o, 0xfffffffffffffff0ull);
		fz_enc_len(&sd.o, 0x100);
		fz_enc_desc_tail(&sd.o, (uint16_t)(W | pf), 3);
		fz_enc_desc_head(&sd.o, 4);
		fz_enc_addr_hole(&sd.o, 0);
		fz_enc_len(&sd.o, 32);
		fz_enc_desc_tail(&sd.o, (uint16_t)(VL_DESC_F_INDIRECT | pf), 4);
		MAKE_AVAIL(&sd, 5, 0, 1, 2, 3, 4);
	}
	good_then_burst(&sd, 0x3000);
	save_dp(target, "hostile-unmapped", &sd);

	/* straddles: a buffer over a region boundary (coarse: 16 KiB, 4 KiB regions: every
	 * page), an indirect table over one, and buffers aliasing the rings. */
	for (int gran = 0; gran < 2; gran++) {
		s = base_setup(packed, rx);
		if (gran)
			s.features |= FZ_DPF_GRAN_4K;
		seed_begin(&sd, packed, rx, &s);
		uint16_t pf = packed ? PAV : 0;

		fz_enc_desc_head(&sd.o, 0);
		fz_enc_addr_boundary(&sd.o, 4, 20);
		fz_enc_len(&sd.o, 3000);
		fz_enc_desc_tail(&sd.o, (uint16_t)(W | pf), 0);
		/* An indirect table straddling a boundary. */
		for (uint16_t i = 0; i < 2; i++) {
			fz_enc_table_head(&sd.o, (uint16_t)(8 * 4096 - 8 + 16 * i));
			fz_enc_addr_ram(&sd.o, (uint16_t)(0x5000 + 0x100 * i));
			fz_enc_len(&sd.o, 100);
			fz_enc_desc_tail(&sd.o, (uint16_t)(W | (packed ? 0 : (i ? 0 : VL_DESC_F_NEXT))),
					 1);
		}
		fz_enc_desc_head(&sd.o, 1);
		fz_enc_addr_boundary(&sd.o, 8, 8);
		fz_enc_len(&sd.o, 32);
		fz_enc_desc_tail(&sd.o, (uint16_t)(VL_DESC_F_INDIRECT | pf), 1);
		/* A buffer over the used ring / the descriptors themselves. */
		fz_enc_desc_head(&sd.o, 2);
		fz_enc_addr_ring(&sd.o, packed ? 0x0 : 0x2000);
		fz_enc_len(&sd.o, 200);
		fz_enc_desc_tail(&sd.o, (uint16_t)(W | pf), 2);
		MAKE_AVAIL(&sd, 3, 0, 1, 2);
		good_then_burst(&sd, 0x3000);
		save_dp(target, gran ? "hostile-straddle-4k" : "hostile-straddle-coarse", &sd);
	}

	/* header over three descriptors (4 + 4 + rest), valid. */
	s = base_setup(packed, rx);
	seed_begin(&sd, packed, rx, &s);
	{
		uint16_t pf = packed ? PAV : 0;

		desc_ram(&sd, 0, 0x100, 4, (uint16_t)(W | pf | VL_DESC_F_NEXT), 1);
		desc_ram(&sd, 1, 0x104, 4, (uint16_t)(W | pf | VL_DESC_F_NEXT), 2);
		desc_ram(&sd, 2, 0x108, 4 + 200, (uint16_t)(W | pf), 2);
		MAKE_AVAIL(&sd, 3, 0);
	}
	burst(&sd);
	save_dp(target, "hostile-header-over-3-descs", &sd);

	/* short chain: exactly the header, and less. */
	s = base_setup(packed, rx);
	seed_begin(&sd, packed, rx, &s);
	desc_ram(&sd, 0, 0x100, sd.hdr_len, (uint16_t)(W | (packed ? PAV : 0)), 0);
	desc_ram(&sd, 1, 0x200, 3, (uint16_t)(W | (packed ? PAV : 0)), 1);
	MAKE_AVAIL(&sd, 2, 0, 1);
	good_then_burst(&sd, 0x3000);
	save_dp(target, "hostile-short-chain", &sd);

	/* zero-length descriptors around data. */
	s = base_setup(packed, rx);
	seed_begin(&sd, packed, rx, &s);
	{
		uint16_t pf = packed ? PAV : 0;

		desc_ram(&sd, 0, 0x100, 0, (uint16_t)(W | pf | VL_DESC_F_NEXT), 1);
		desc_ram(&sd, 1, 0x100, 300, (uint16_t)(W | pf | VL_DESC_F_NEXT), 2);
		desc_ram(&sd, 2, 0x000, 0, (uint16_t)(W | pf), 2);
		desc_ram(&sd, 3, 0x400, 0, (uint16_t)(W | pf), 3);
		MAKE_AVAIL(&sd, 4, 0, 3);
	}
	good_then_burst(&sd, 0x3000);
	save_dp(target, "hostile-zero-length", &sd);

	/* lengths summing past 2^32. */
	s = base_setup(packed, rx);
	seed_begin(&sd, packed, rx, &s);
	desc_ram(&sd, 0, 0x100, 100, (uint16_t)(W | (packed ? PAV : 0) | VL_DESC_F_NEXT), 1);
	desc_ram(&sd, 1, 0x200, 0xffffffc0u, (uint16_t)(W | (packed ? PAV : 0)), 1);
	MAKE_AVAIL(&sd, 2, 0);
	good_then_burst(&sd, 0x3000);
	save_dp(target, "hostile-len-overflow", &sd);

	/* TX packets at the size limit: two descriptors over the same RAM make header + 65536
	 * bytes (too big) and header + 65535 (the largest packet). */
	s = base_setup(packed, rx);
	seed_begin(&sd, packed, rx, &s);
	{
		const uint16_t pf = (uint16_t)(W | (packed ? PAV : 0));

		desc_ram(&sd, 0, 0x000, 0xc000, (uint16_t)(pf | VL_DESC_F_NEXT), 1);
		desc_ram(&sd, 1, 0x000, 0x4000 + sd.hdr_len, pf, 1);
		desc_ram(&sd, 2, 0x000, 0xc000, (uint16_t)(pf | VL_DESC_F_NEXT), 3);
		desc_ram(&sd, 3, 0x000, 0x3fff + sd.hdr_len, pf, 3);
		MAKE_AVAIL(&sd, 4, 0, 2);
	}
	good_then_burst(&sd, 0x3000);
	save_dp(target, "hostile-tx-size-limit", &sd);

	/* wrong direction: a device-writable TX buffer / a read-only RX buffer. */
	s = base_setup(packed, rx);
	seed_begin(&sd, packed, rx, &s);
	desc_ram(&sd, 0, 0x100, 200, (uint16_t)((rx ? 0 : VL_DESC_F_WRITE) | (packed ? PAV : 0)), 0);
	MAKE_AVAIL(&sd, 1, 0);
	good_then_burst(&sd, 0x3000);
	save_dp(target, "hostile-wrong-direction", &sd);

	/* bogus offload headers (TX): checksum past the end, unknown GSO, ECN alone, GSO
	 * with size 0 or headers past the end. RX gets them as host offloads instead. */
	s = base_setup(packed, rx);
	seed_begin(&sd, packed, rx, &s);
	{
		static const uint8_t hdrs[5][10] = {
			{VL_NET_HDR_F_NEEDS_CSUM, 0, 0, 0, 0, 0, 0xf0, 0xff, 0x10, 0},
			{0, 7, 0, 0, 1, 0, 0, 0, 0, 0},
			{0, VL_NET_HDR_GSO_ECN, 0, 0, 0, 0, 0, 0, 0, 0},
			{0, VL_NET_HDR_GSO_TCPV4, 10, 0, 0, 0, 0, 0, 0, 0},
			{0, VL_NET_HDR_GSO_UDP, 0xff, 0xff, 0x40, 0, 0, 0, 0, 0},
		};

		for (int k = 0; k < 5; k++)
			fz_enc_post(&sd.o, 0, 100, (uint16_t)(0x400 * k), hdrs[k]);
		if (rx) {
			static const uint16_t lens[4] = {100, 100, 100, 100};
			static const uint8_t mods[4] = {2, 8, 10, 14};

			fz_enc_enqueue(&sd.o, 4, lens, mods);
		} else {
			burst(&sd);
		}
	}
	good_then_burst(&sd, 0x3000);
	save_dp(target, "hostile-bad-offload", &sd);

	/* Well-formed GSO headers the device did not offer to take: without the HOST_* GSO
	 * features (gso_not_negotiated), and with them but without HOST_ECN
	 * (ecn_not_negotiated), next to one it takes. */
	for (int v = 0; v < 2; v++) {
		static const uint8_t hdrs[5][10] = {
			{VL_NET_HDR_F_NEEDS_CSUM, VL_NET_HDR_GSO_TCPV4, 54, 0, 0xa8, 0x05, 34, 0, 16, 0},
			{VL_NET_HDR_F_NEEDS_CSUM, VL_NET_HDR_GSO_TCPV6, 74, 0, 0xa0, 0x05, 54, 0, 16, 0},
			{VL_NET_HDR_F_NEEDS_CSUM, VL_NET_HDR_GSO_UDP, 42, 0, 0xdc, 0x05, 34, 0, 6, 0},
			{VL_NET_HDR_F_NEEDS_CSUM, VL_NET_HDR_GSO_UDP_L4, 42, 0, 0xdc, 0x05, 34, 0, 6, 0},
			{VL_NET_HDR_F_NEEDS_CSUM, VL_NET_HDR_GSO_TCPV4 | VL_NET_HDR_GSO_ECN, 54, 0, 0xa8,
			 0x05, 34, 0, 16, 0},
		};

		s = base_setup(packed, rx);
		s.hold |= v == 0 ? FZ_HOLD_NO_GSO : FZ_HOLD_NO_ECN;
		seed_begin(&sd, packed, rx, &s);
		for (int k = 0; k < 5; k++)
			fz_enc_post(&sd.o, FZ_POST_RAW_HDR, 200, (uint16_t)(0x400 * k), hdrs[k]);
		burst(&sd);
		good_then_burst(&sd, 0x3000);
		save_dp(target, v == 0 ? "hostile-gso-not-negotiated" : "hostile-ecn-not-negotiated",
			&sd);
	}

	/* The frame rules of a GSO packet, each offence once between two frames that keep
	 * them: a 200-byte frame is posted with its header, then its own headers are written
	 * over the fill (TCP over IPv4, UDP over IPv6: lab_frame_build), two descriptors each
	 * (header, frame), six chains in a ring of 16. Named after the drop
	 * each breaks: gso_without_csum, gso_bad_frame, gso_proto_mismatch, gso_csum_mismatch. */
	{
		const struct lab_frame_spec v4tcp = {.seed = 21, .payload = 146, .tcp_flags = 0x18};
		const struct lab_frame_spec v6udp = {.ipv6 = true, .udp = true, .seed = 22,
						     .payload = 138};
		struct lab_frame_layout l4t, l6u;
		uint8_t f4[256], f6[256];

		lab_frame_build(&v4tcp, true, f4, sizeof(f4), &l4t);
		lab_frame_build(&v6udp, true, f6, sizeof(f6), &l6u);
		static const struct {
			uint8_t hdr[10];
			bool v6;   /* which frame is written behind it (none: the fill stays) */
			bool frame;
		} rows[] = {
			/* good: TCPv4, the checksum at 34 + 16 */
			{{1, VL_NET_HDR_GSO_TCPV4, 54, 0, 0xa8, 0x05, 34, 0, 16, 0}, false, true},
			/* gso_without_csum */
			{{0, VL_NET_HDR_GSO_TCPV4, 54, 0, 0xa8, 0x05, 34, 0, 16, 0}, false, true},
			/* gso_bad_frame: the fill is no IP frame */
			{{1, VL_NET_HDR_GSO_TCPV4, 54, 0, 0xa8, 0x05, 34, 0, 16, 0}, false, false},
			/* gso_proto_mismatch: TCPV6 on the IPv4 frame */
			{{1, VL_NET_HDR_GSO_TCPV6, 54, 0, 0xa8, 0x05, 34, 0, 16, 0}, false, true},
			/* gso_csum_mismatch: UDP's offset on TCP */
			{{1, VL_NET_HDR_GSO_TCPV4, 54, 0, 0xa8, 0x05, 34, 0, 6, 0}, false, true},
			/* good: UDP_L4 over IPv6, the checksum at 54 + 6 */
			{{1, VL_NET_HDR_GSO_UDP_L4, 62, 0, 0xb0, 0x04, 54, 0, 6, 0}, true, true},
		};

		for (int zc = 0; zc < 2; zc++) {
		s = base_setup(packed, rx);
		/* The second time with zero-copy on: the frames are checked before a lease. */
		s.zc = zc ? 1 : 0;
		seed_begin(&sd, packed, rx, &s);
		for (int k = 0; k < 6; k++) {
			const uint16_t off = (uint16_t)(0x400 * k);

			fz_enc_post(&sd.o, FZ_POST_RAW_HDR | FZ_POST_HDR_ALONE, 200, off,
				    rows[k].hdr);
			if (rows[k].frame)
				fz_enc_write(&sd.o, true, (uint16_t)(off + sd.hdr_len),
					     rows[k].v6 ? f6 : f4,
					     (uint8_t)(rows[k].v6 ? l6u.hdr_len : l4t.hdr_len));
		}
		burst(&sd);
		good_then_burst(&sd, 0x3000);
		save_dp(target, zc ? "hostile-gso-frame-rules-zc" : "hostile-gso-frame-rules", &sd);
		}
	}

	/* Offloads the receiving driver did not negotiate: every RX offload preset (checksum
	 * flags, RSC_INFO, TCPv4 and UDP_L4 GSO with ECN, all ones, random) against a driver
	 * that took nothing (no GUEST_CSUM, no GUEST_* GSO, no ECN), then one that took only
	 * GUEST_CSUM: rx_csum_not_negotiated, rx_flags_unknown, rx_gso_not_negotiated (run on
	 * TX too, harmlessly). */
	for (int v = 0; v < 2; v++) {
		static const uint16_t lens[7] = {100, 100, 100, 100, 100, 100, 100};
		static const uint8_t mods[7] = {2, 4, 6, 8, 10, 12, 14};

		s = base_setup(packed, rx);
		s.hold |= FZ_HOLD_NO_GSO | FZ_HOLD_NO_ECN | (v == 0 ? FZ_HOLD_NO_GUEST_CSUM : 0);
		s.features |= FZ_DPF_MERGEABLE;
		seed_begin(&sd, packed, rx, &s);
		for (int k = 0; k < 8; k++)
			good_post(&sd, 0, 200, (uint16_t)(0x400 * k));
		if (rx)
			fz_enc_enqueue(&sd.o, 7, lens, mods);
		else
			burst(&sd);
		good_then_burst(&sd, 0x3000);
		save_dp(target, v == 0 ? "hostile-rx-offload-not-negotiated"
				       : "hostile-rx-gso-not-negotiated", &sd);
	}

	/* RX specifics (run on TX too, harmlessly): buffers smaller than the header, packets
	 * over 64 KiB, a packet no buffer can hold. */
	s = base_setup(packed, rx);
	s.features |= FZ_DPF_MERGEABLE;
	seed_begin(&sd, packed, rx, &s);
	desc_ram(&sd, 0, 0x100, 4, (uint16_t)(W | (packed ? PAV : 0)), 0);
	MAKE_AVAIL(&sd, 1, 0);
	for (int k = 0; k < 6; k++)
		good_post(&sd, 0, 200, (uint16_t)(0x1000 + 0x400 * k));
	if (rx) {
		static const uint16_t lens[4] = {60000, 536, 1000, 2000};
		static const uint8_t mods[4] = {1, 0, 0, 0};

		fz_enc_enqueue(&sd.o, 4, lens, mods);
	} else {
		burst(&sd);
	}
	save_dp(target, "hostile-rx-small-buffers-big-packets", &sd);

	/* Zero-copy with a guest that re-posts what the device holds: split re-publishes the
	 * heads of held chains, packed laps the ring over positions the device still holds. */
	for (int in_order = 0; in_order < 2; in_order++) {
		s = base_setup(packed, rx);
		s.zc = 1 | (15 << 3); /* min_len 0, up to 16 chains held */
		s.hold = 1;
		if (in_order)
			s.features |= FZ_DPF_IN_ORDER;
		seed_begin(&sd, packed, rx, &s);
		for (int k = 0; k < 3; k++) {
			for (int c = 0; c < 4; c++)
				good_post(&sd, FZ_POST_HDR_ALONE, 1000, (uint16_t)(0x2000 * c));
			burst(&sd);
			if (!packed) {
				fz_enc_avail(&sd.o, 8);
				avail(&sd, 10);
				burst(&sd);
			}
		}
		fz_enc_op1(&sd.o, FZ_OP_FREE, 2);
		burst(&sd);
		fz_enc_op1(&sd.o, FZ_OP_FREE, 0);
		fz_enc_op0(&sd.o, FZ_OP_COMPLETE);
		save_dp(target,
			in_order ? "hostile-zero-copy-repost-in-order" : "hostile-zero-copy-repost",
			&sd);
	}

	/* Garbage everywhere: guest memory filled with 0xff, then a burst. */
	s = base_setup(packed, rx);
	s.fill = 0xff;
	seed_begin(&sd, packed, rx, &s);
	burst(&sd);
	fz_enc_fill(&sd.o, false, 0, 0x4000, 0x81);
	burst(&sd);
	save_dp(target, "hostile-garbage-fill", &sd);
}


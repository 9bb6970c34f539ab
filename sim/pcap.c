/* SPDX-License-Identifier: MIT */
/* pcap writer: see pcap.h. The format: a 24-byte global header (magic 0xa1b2c3d4 in host
 * byte order, version 2.4, snap length, link type), then per frame a 16-byte record header
 * (seconds, microseconds, captured length, original length) and the bytes. */
#include "pcap.h"

#include <string.h>

#define PCAP_MAGIC 0xa1b2c3d4u
#define PCAP_SNAPLEN 262144u
#define PCAP_LINKTYPE_ETHERNET 1u

static void put(struct lab_pcap *p, const void *b, size_t n)
{
	if (n && fwrite(b, 1, n, p->f) != n)
		p->failed = true;
}

bool lab_pcap_open(struct lab_pcap *p, const char *path)
{
	uint32_t hdr32[2] = {PCAP_MAGIC, 0};
	uint16_t ver[2] = {2, 4};
	uint32_t rest[3] = {0 /* sigfigs */, PCAP_SNAPLEN, PCAP_LINKTYPE_ETHERNET};

	memset(p, 0, sizeof(*p));
	p->f = fopen(path, "wb");
	if (!p->f)
		return false;
	put(p, &hdr32[0], 4);
	put(p, ver, sizeof(ver));
	put(p, &hdr32[1], 4);  /* thiszone */
	put(p, rest, sizeof(rest));
	return !p->failed;
}

void lab_pcap_write(struct lab_pcap *p, const uint8_t *frame, uint32_t len)
{
	uint32_t cap = len < PCAP_SNAPLEN ? len : PCAP_SNAPLEN;
	uint32_t rec[4] = {(uint32_t)(p->packets / 1000000u), (uint32_t)(p->packets % 1000000u),
			   cap, len};

	put(p, rec, sizeof(rec));
	put(p, frame, cap);
	p->packets++;
}

bool lab_pcap_close(struct lab_pcap *p)
{
	bool ok = !p->failed;

	if (p->f && fclose(p->f) != 0)
		ok = false;
	p->f = NULL;
	return ok;
}

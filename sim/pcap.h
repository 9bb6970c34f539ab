/* SPDX-License-Identifier: MIT */
/* A minimal pcap writer (the classic libpcap file format, LINKTYPE_ETHERNET), so the
 * packets of a trace or a run can be opened in Wireshark or tshark. Timestamps are synthetic
 * and deterministic (packet n at n microseconds): a replay writes the same file every time. */
#ifndef LAB_PCAP_H
#define LAB_PCAP_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct lab_pcap {
	FILE *f;
	uint64_t packets;
	bool failed;       /* a write failed; lab_pcap_close reports it */
};

/* Create path and write the file header. False (errno set) on failure. */
bool lab_pcap_open(struct lab_pcap *p, const char *path);
/* Append one frame of len bytes. */
void lab_pcap_write(struct lab_pcap *p, const uint8_t *frame, uint32_t len);
/* Close; false if any write failed. */
bool lab_pcap_close(struct lab_pcap *p);

#endif

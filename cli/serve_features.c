/* SPDX-License-Identifier: MIT */
/* `vhostlab serve`: the offload features it offers (--offloads) and the virtio rules between
 * them. A device must not offer a feature without the ones it requires (virtio 1.2, 5.1.3.1):
 * TSO and USO need the checksum offload of the same direction, ECN needs TSO. A front end
 * offered HOST_TSO4 without CSUM could take it and send segmentation requests whose checksum
 * nobody would complete. */
#include <stdio.h>
#include <string.h>

#include "serve.h"

#define F(bit) VL_FEATURE(VL_F_NET_##bit)

struct offload_feature {
	uint64_t bit;
	const char *name;   /* as the trace format's `features` names it */
	uint64_t needs_any; /* 0, or features of which at least one must be offered */
	const char *needs;  /* their names, for the message */
};

/* Requirements before the features that need them, so one pass prunes a chain (ECN after
 * TSO after CSUM). */
static const struct offload_feature offloads[] = {
	{F(CSUM), "csum", 0, NULL},
	{F(GUEST_CSUM), "guest_csum", 0, NULL},
	{F(HOST_TSO4), "host_tso4", F(CSUM), "csum"},
	{F(HOST_TSO6), "host_tso6", F(CSUM), "csum"},
	{F(HOST_USO), "host_uso", F(CSUM), "csum"},
	{F(HOST_UFO), "host_ufo", F(CSUM), "csum"},
	{F(HOST_ECN), "host_ecn", F(HOST_TSO4) | F(HOST_TSO6), "host_tso4 or host_tso6"},
	{F(GUEST_TSO4), "guest_tso4", F(GUEST_CSUM), "guest_csum"},
	{F(GUEST_TSO6), "guest_tso6", F(GUEST_CSUM), "guest_csum"},
	{F(GUEST_USO4), "guest_uso4", F(GUEST_CSUM), "guest_csum"},
	{F(GUEST_USO6), "guest_uso6", F(GUEST_CSUM), "guest_csum"},
	{F(GUEST_UFO), "guest_ufo", F(GUEST_CSUM), "guest_csum"},
	{F(GUEST_ECN), "guest_ecn", F(GUEST_TSO4) | F(GUEST_TSO6), "guest_tso4 or guest_tso6"},
};

#define NOFFLOADS (sizeof(offloads) / sizeof(offloads[0]))

uint64_t serve_features_prune(uint64_t f)
{
	for (size_t i = 0; i < NOFFLOADS; i++) {
		if ((f & offloads[i].bit) && offloads[i].needs_any && !(f & offloads[i].needs_any))
			f &= ~offloads[i].bit;
	}
	return f;
}

bool serve_features_unmet(uint64_t f, char *msg, size_t n)
{
	for (size_t i = 0; i < NOFFLOADS; i++) {
		const struct offload_feature *o = &offloads[i];

		if ((f & o->bit) && o->needs_any && !(f & o->needs_any)) {
			snprintf(msg, n, "%s (bit %d) needs %s", o->name, __builtin_ctzll(o->bit),
				 o->needs);
			return true;
		}
	}
	return false;
}

void serve_features_offload_names(uint64_t f, char *buf, size_t n)
{
	size_t used = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < NOFFLOADS && used < n; i++) {
		if (!(f & offloads[i].bit))
			continue;
		int w = snprintf(buf + used, n - used, "%s%s", used ? " " : "", offloads[i].name);

		if (w < 0)
			break;
		used += (size_t)w;
	}
	if (used == 0)
		snprintf(buf, n, "none");
}

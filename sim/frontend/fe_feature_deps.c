/* SPDX-License-Identifier: MIT */
/* The virtio-net feature dependencies (fe_feature_deps.h). */
#include "fe_feature_deps.h"

#include <stddef.h>

#include "vhostlab/vl_virtio.h"

#define F(bit) VL_FEATURE(bit)

/* A feature and what it may not be offered without (virtio 5.1.3.1). */
static const struct {
	unsigned bit;
	uint64_t needs_any;
	const char *what;
} deps[] = {
	{VL_F_NET_HOST_TSO4, F(VL_F_NET_CSUM), "HOST_TSO4 without CSUM"},
	{VL_F_NET_HOST_TSO6, F(VL_F_NET_CSUM), "HOST_TSO6 without CSUM"},
	{VL_F_NET_HOST_UFO, F(VL_F_NET_CSUM), "HOST_UFO without CSUM"},
	{VL_F_NET_HOST_USO, F(VL_F_NET_CSUM), "HOST_USO without CSUM"},
	{VL_F_NET_HOST_ECN, F(VL_F_NET_HOST_TSO4) | F(VL_F_NET_HOST_TSO6),
	 "HOST_ECN without HOST_TSO4 or HOST_TSO6"},
	{VL_F_NET_GUEST_TSO4, F(VL_F_NET_GUEST_CSUM), "GUEST_TSO4 without GUEST_CSUM"},
	{VL_F_NET_GUEST_TSO6, F(VL_F_NET_GUEST_CSUM), "GUEST_TSO6 without GUEST_CSUM"},
	{VL_F_NET_GUEST_UFO, F(VL_F_NET_GUEST_CSUM), "GUEST_UFO without GUEST_CSUM"},
	{VL_F_NET_GUEST_USO4, F(VL_F_NET_GUEST_CSUM), "GUEST_USO4 without GUEST_CSUM"},
	{VL_F_NET_GUEST_USO6, F(VL_F_NET_GUEST_CSUM), "GUEST_USO6 without GUEST_CSUM"},
	{VL_F_NET_GUEST_ECN, F(VL_F_NET_GUEST_TSO4) | F(VL_F_NET_GUEST_TSO6),
	 "GUEST_ECN without GUEST_TSO4 or GUEST_TSO6"},
	{VL_F_NET_MQ, F(VL_F_NET_CTRL_VQ), "MQ without CTRL_VQ"},
};

const char *lab_fe_feature_deps_broken(uint64_t offered)
{
	for (size_t i = 0; i < sizeof(deps) / sizeof(deps[0]); i++)
		if ((offered & F(deps[i].bit)) && !(offered & deps[i].needs_any))
			return deps[i].what;
	return NULL;
}

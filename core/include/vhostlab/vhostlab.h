/* SPDX-License-Identifier: MIT */
/* Umbrella header of the vhostlab core: include this one. */
#ifndef VHOSTLAB_H
#define VHOSTLAB_H

#include "vl_error.h"
#include "vl_mem.h"
#include "vl_net.h"
#include "vl_pkt.h"
#include "vl_sw_offload.h"
#include "vl_vhost_user.h"
#include "vl_virtio.h"
#include "vl_vq.h"

#define VHOSTLAB_VERSION "0.1.0"

#endif

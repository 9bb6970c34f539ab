/* SPDX-License-Identifier: MIT */
/* The virtio-net feature dependencies a device must respect when it offers features
 * (virtio 5.1.3.1: a feature is not offered without the one it depends on). One table for
 * the probe's feature-deps case and for the trace statement that replays it over a socket
 * (`message get-features expect=deps`, sim/trace/replay_socket.c). */
#ifndef LAB_FE_FEATURE_DEPS_H
#define LAB_FE_FEATURE_DEPS_H

#include <stdint.h>

/* The first dependency the offered bits break, as text ("HOST_ECN without HOST_TSO4 or
 * HOST_TSO6"), or NULL when they break none. */
const char *lab_fe_feature_deps_broken(uint64_t offered);

#endif

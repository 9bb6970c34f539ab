/* SPDX-License-Identifier: MIT */
/* Which statements mean the same against any vhost-user back end (docs/trace-format.md,
 * "Portability: replaying over a socket"). A portable statement is either a write into
 * shared guest memory (or a kick, a new memory table), a point where the back end is given
 * a chance to run (dequeue, discard), block structure, or an expectation the guest can check
 * on its own side of the rings. Everything else drives or reads vhostlab's own core and is
 * only meaningful in process. */
#include "trace.h"

bool lab_trace_op_portable(const struct lab_trace_op *op)
{
	switch (op->kind) {
	case LAB_T_WRITE:
	case LAB_T_FILL:
	case LAB_T_DESC:
	case LAB_T_PDESC:
	case LAB_T_IDESC:
	case LAB_T_AVAIL:
	case LAB_T_KICK:
	case LAB_T_POST:
	case LAB_T_DEQUEUE:    /* over a socket: let the back end run */
	case LAB_T_DISCARD:    /* likewise: what it does with the chains is its own business */
	case LAB_T_REMAP:      /* a new memory table over the same regions */
	case LAB_T_MESSAGE:    /* sent as it is, in process to the core's vhost-user device */
	case LAB_T_REPEAT:
	case LAB_T_END:
	case LAB_T_EITHER:
	case LAB_T_OR:
	case LAB_T_EXPECT_USED:
	case LAB_T_EXPECT_USED_SET:
	case LAB_T_EXPECT_MEM:
	case LAB_T_EXPECT_LOGGED: /* the shared log, as the front end reads it */
		return true;
	case LAB_T_EXPECT_BROKEN:
		/* A reason is vhostlab's name for why; any back end can only be seen to stop. */
		return (op->given & (LAB_TA_ANY | LAB_TA_NONE)) != 0;
	default:
		/* mutate, double-fetch and fault hook into the core's reads; free, complete,
		 * enqueue, kicks and set call the core's API; the other expectations read its
		 * results and counters. */
		return false;
	}
}

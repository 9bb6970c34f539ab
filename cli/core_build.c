/* SPDX-License-Identifier: MIT */
/* Which copy of the core this program runs.
 *
 * Two programs, two builds of the core, and neither runs the other:
 * - `vhostlab`, the lab program, links the core compiled with the lab's guest-load hooks, so
 *   that traces with `mutate` and the double-fetch adversary replay. Every load of a
 *   guest-owned ring field then calls a (no-op) hook: fine for the lab, slower for a back end
 *   serving a real front end or for a benchmark. It runs every command itself, `serve` and
 *   `bench` included, and says on stderr which core those run on (cli_lab_core_note);
 * - `vhostlab-fast`, the production program, is serve and bench linked with the production
 *   core (no hooks, exactly libvhostlab's objects). */
#include <stddef.h>

#include "cli.h"

const char *cli_core_build(void)
{
#ifdef VL_LAB_BUILD
	return "lab-hooks";
#else
	return "production";
#endif
}

/* Each differing option as "+name" (or nothing), joined at compile time. */
#ifdef VL_NO_FORCE_INLINE
#define VARIANT_NOINLINE "+noinline"
#else
#define VARIANT_NOINLINE ""
#endif
#ifdef VL_BUILT_LTO
#define VARIANT_LTO "+lto"
#else
#define VARIANT_LTO ""
#endif
#ifdef VL_RX_TWO_PATHS
#define VARIANT_TWOPATH "+twopath"
#else
#define VARIANT_TWOPATH ""
#endif
#ifdef VL_MUTANT_NO_RX_PAYLOAD_LOG
#define VARIANT_MUTANT "+mutant-no-rx-payload-log"
#else
#define VARIANT_MUTANT ""
#endif

const char *cli_build_variant(void)
{
	static const char joined[] = VARIANT_NOINLINE VARIANT_LTO VARIANT_TWOPATH VARIANT_MUTANT;

	return joined[0] ? joined + 1 : "default";
}

const char *cli_lab_core_note(void)
{
#ifdef VL_LAB_BUILD
	return "runs on the lab build of the core (guest-load hooks; slower); vhostlab-fast is "
	       "the production program for serving and benchmarking";
#else
	return NULL;
#endif
}

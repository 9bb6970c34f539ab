/* SPDX-License-Identifier: MIT */
/* Which copy of the core this program runs, and the hand-over from the lab build to the
 * production build.
 *
 * `vhostlab` links the core compiled with the lab's guest-load hooks, so that traces with
 * `mutate` and the double-fetch adversary replay. Every load of a guest-owned ring field then
 * calls a (no-op) hook: fine for the lab, wrong for a back end serving a real front end or
 * for a benchmark. `vhostlab-fast` is the same program linked with the production core
 * (no hooks, exactly libvhostlab's objects); `vhostlab serve` and `vhostlab bench` hand
 * themselves over to it when it sits next to the running binary. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

const char *cli_build_variant(void)
{
	static const char joined[] = VARIANT_NOINLINE VARIANT_LTO VARIANT_TWOPATH;

	return joined[0] ? joined + 1 : "default";
}

#ifdef VL_LAB_BUILD
/* Does the command line ask for something only the hooked core can do? */
static bool needs_hooks(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--"))
			break;
		/* serve --record observes every ring load the core makes. */
		if (!strcmp(argv[i], "--record") || !strncmp(argv[i], "--record=", 9))
			return true;
	}
	return false;
}
#endif

void cli_exec_production(int argc, char **argv)
{
#ifdef VL_LAB_BUILD
	const char *env = getenv("VHOSTLAB_CORE");

	if (env && !strcmp(env, "lab-hooks"))
		return;
	if (needs_hooks(argc, argv))
		return;

	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (n <= 0 || (size_t)n >= sizeof(self) - 1)
		return;
	self[n] = '\0';
	char *slash = strrchr(self, '/');

	if (slash == NULL)
		return;
	char fast[PATH_MAX];
	int len = snprintf(fast, sizeof(fast), "%.*s/vhostlab-fast", (int)(slash - self), self);

	if (len < 0 || (size_t)len >= sizeof(fast) || access(fast, X_OK) != 0)
		return; /* not installed beside us: run here, on the hooked core */

	/* argv[0] of the subcommand is its name; the new program needs its own in front. */
	char **nargv = calloc((size_t)argc + 2, sizeof(*nargv));

	if (nargv == NULL)
		return;
	nargv[0] = fast;
	for (int i = 0; i < argc; i++)
		nargv[i + 1] = argv[i];
	execv(fast, nargv);
	fprintf(stderr, "vhostlab: cannot run %s (%s); running on the lab-hooks core\n", fast,
		strerror(errno));
	free(nargv);
#else
	(void)argc;
	(void)argv;
#endif
}

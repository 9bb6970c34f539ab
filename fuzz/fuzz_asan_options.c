/* SPDX-License-Identifier: MIT */
/* The AddressSanitizer defaults every fuzz target (and its replay program) starts with; an
 * ASAN_OPTIONS in the environment still overrides them.
 *
 * Why: ASan keeps freed memory in a quarantine (256 MiB by default) so a use after free hits
 * poisoned bytes. A target sets up queues, pools and guest memory per input and frees them
 * at its end, so with the default every allocation of every input came from memory the
 * process had never touched: a page fault and a page of zeros per page, which on these
 * virtual machines was most of fuzz_differential's time (157 executions per second).
 * A 16 MiB quarantine still holds everything the current input and the several before it
 * freed -- a use after free within an input, or of state an input left behind, is caught as
 * before -- while the pages are recycled warm. */
#include "fuzz_target.h"

const char *__asan_default_options(void);

const char *__asan_default_options(void)
{
	return "quarantine_size_mb=16:thread_local_quarantine_size_kb=256";
}

/* SPDX-License-Identifier: MIT */
/* vhostlab bench --instructions: the core's instructions per packet, from callgrind.
 *
 * Wall-clock numbers on a shared 2-core machine wander by tens of percent; instruction
 * counts do not. This program runs itself again, one cell at a time, under
 * `valgrind --tool=callgrind --collect-atstart=no --toggle-collect=bench_core_*`: only the
 * instructions executed inside the bench's wrappers of the core's entry points (the burst
 * calls and the packet free, bench_loop.c) are counted, never the simulated guest's. The
 * child's loop is driven by a packet count, not the clock, and every seed is fixed, so two
 * runs count the same instructions. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "cli.h"

#define INSTR_PACKETS_DEFAULT 20000u

static const char *onoff(bool v)
{
	return v ? "on" : "off";
}

/* The total of the collected events: callgrind writes "summary: N" (and "totals: N"). */
static int read_total(const char *path, uint64_t *total, char *err, size_t errlen)
{
	FILE *f = fopen(path, "r");
	char line[512];
	bool found = false;

	if (!f) {
		snprintf(err, errlen, "cannot read callgrind's output %s: %s", path,
			 strerror(errno));
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "summary:", 8) || !strncmp(line, "totals:", 7)) {
			*total = strtoull(strchr(line, ':') + 1, NULL, 10);
			found = true;
			break;
		}
	}
	fclose(f);
	if (!found) {
		snprintf(err, errlen, "no summary line in callgrind's output %s", path);
		return -1;
	}
	return 0;
}

/* Run argv, collect its stdout into out (NUL-terminated); its stderr passes through. */
static int run_child(char *const *argv, char *out, size_t outlen, int *status)
{
	int fds[2];

	if (pipe(fds) != 0)
		return -1;
	pid_t pid = fork();

	if (pid < 0) {
		close(fds[0]);
		close(fds[1]);
		return -1;
	}
	if (pid == 0) {
		dup2(fds[1], STDOUT_FILENO);
		close(fds[0]);
		close(fds[1]);
		execvp(argv[0], argv);
		fprintf(stderr, "vhostlab bench: cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	close(fds[1]);
	size_t got = 0;
	ssize_t n;

	while ((n = read(fds[0], out + got, outlen - 1 - got)) > 0 || (n < 0 && errno == EINTR))
		if (n > 0)
			got += (size_t)n;
	out[got] = '\0';
	close(fds[0]);
	while (waitpid(pid, status, 0) < 0)
		if (errno != EINTR)
			return -1;
	return 0;
}

int bench_callgrind_cell(const struct bench_opts *o, const struct bench_cell *c,
			 struct bench_result *res, char *err, size_t errlen)
{
	char self[PATH_MAX], outfile[PATH_MAX], outarg[PATH_MAX + 32];
	ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (len <= 0) {
		snprintf(err, errlen, "cannot find this program (/proc/self/exe): %s",
			 strerror(errno));
		return -1;
	}
	self[len] = '\0';
	const char *tmp = getenv("TMPDIR");

	if (!o->profile_dir)
		snprintf(outfile, sizeof(outfile), "%s/vhostlab-bench-%d.callgrind",
			 tmp && *tmp ? tmp : "/tmp", (int)getpid());
	else if (!bench_profile_path(o, c, outfile, sizeof(outfile))) {
		snprintf(err, errlen, "--profile '%.200s': the file name for this cell is longer "
			 "than %zu bytes", o->profile_dir, sizeof(outfile) - 1);
		return -1;
	}
	snprintf(outarg, sizeof(outarg), "--callgrind-out-file=%s", outfile);

	char size[16], batch[16], burst[16], threads[16], qsize[16], packets[24], pieces[16],
	     regions[16];

	snprintf(size, sizeof(size), "%u", c->size);
	snprintf(pieces, sizeof(pieces), "%u", c->pieces);
	snprintf(regions, sizeof(regions), "%u", c->regions);
	if (c->batch == BENCH_BATCH_ALL)
		snprintf(batch, sizeof(batch), "all");
	else
		snprintf(batch, sizeof(batch), "%u", c->batch);
	snprintf(burst, sizeof(burst), "%u", o->burst);
	snprintf(threads, sizeof(threads), "%u", o->threads ? o->threads : 1);
	snprintf(qsize, sizeof(qsize), "%u", o->queue_size);
	snprintf(packets, sizeof(packets), "%" PRIu64,
		 o->packets ? o->packets : (uint64_t)INSTR_PACKETS_DEFAULT);

	char *argv[] = {
		"valgrind", "--tool=callgrind", "-q", "--collect-atstart=no",
		"--toggle-collect=" BENCH_CORE_SYMBOLS, outarg, self, "bench", "--callgrind-child",
		"--direction", (char *)bench_dir_name(c->dir),
		"--layout", (char *)bench_layout_name(c->layout),
		"--sizes", size,
		"--mergeable", (char *)onoff(c->mergeable),
		"--in-order", (char *)onoff(c->in_order),
		"--batch", batch,
		"--zero-copy", (char *)onoff(c->zero_copy),
		"--alloc", (char *)bench_alloc_name(c->alloc),
		"--fill", (char *)bench_fill_name(c->fill),
		"--csum", (char *)onoff(c->csum),
		"--pieces", pieces,
		"--indirect", (char *)onoff(c->indirect),
		"--regions", regions,
		"--burst", burst, "--queue-size", qsize, "--reps", "1", "--packets", packets,
		"--threads", threads,
		"--quiet", NULL,
	};
	char out[256];
	int status;

	if (run_child(argv, out, sizeof(out), &status) != 0) {
		snprintf(err, errlen, "cannot run valgrind: %s", strerror(errno));
		return -1;
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		unlink(outfile);
		if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
			snprintf(err, errlen, "valgrind is not installed (apt-get install valgrind)");
		else
			snprintf(err, errlen, "the run under callgrind failed (status %d)", status);
		return -1;
	}
	unsigned long long pk = 0, calls = 0;

	if (sscanf(out, "packets=%llu calls=%llu", &pk, &calls) != 2) {
		unlink(outfile);
		snprintf(err, errlen, "unexpected output from the run under callgrind: '%.80s'",
			 out);
		return -1;
	}
	uint64_t total = 0;
	int rc = read_total(outfile, &total, err, errlen);

	if (rc != 0 || !o->profile_dir)
		unlink(outfile); /* --profile keeps a good one for callgrind_annotate */
	if (rc != 0)
		return -1;
	res->have_instr = true;
	res->instr_total = total;
	res->instr_packets = pk;
	res->instr_calls = calls;
	res->instr_per_pkt = pk ? (double)total / (double)pk : 0;
	res->instr_per_call = calls ? (double)total / (double)calls : 0;
	return 0;
}

bool bench_profile_path(const struct bench_opts *o, const struct bench_cell *c, char *buf,
			size_t len)
{
	char name[256];

	bench_cell_name(c, name, sizeof(name));
	for (char *p = name; *p; p++)
		if (*p == '/')
			*p = '_';
	int n = snprintf(buf, len, "%s/%s.callgrind", o->profile_dir, name);

	return n > 0 && (size_t)n < len;
}

int bench_profile_prepare(const struct bench_opts *o, char *err, size_t errlen)
{
	struct stat st;

	if (mkdir(o->profile_dir, 0777) != 0 && errno != EEXIST) {
		snprintf(err, errlen, "--profile '%s': cannot create it: %s", o->profile_dir,
			 strerror(errno));
		return -1;
	}
	if (stat(o->profile_dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "--profile '%s': not a directory", o->profile_dir);
		return -1;
	}
	return 0;
}

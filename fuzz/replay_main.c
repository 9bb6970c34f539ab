/* SPDX-License-Identifier: MIT */
/* A libFuzzer-compatible driver for builds without libFuzzer (gcc, normal builds): runs
 * LLVMFuzzerTestOneInput once on every file named on the command line, or on every regular
 * file in each directory named (in name order). A failing input aborts, so the process dies
 * and the ctest test that runs it fails, naming the input on stderr first. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz_target.h"
#include "fz_bytes.h"

static unsigned ran;

static int run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL;
	size_t len = 0, cap = 0, n;

	if (!f) {
		fprintf(stderr, "replay: cannot open %s\n", path);
		return -1;
	}
	do {
		if (len == cap) {
			uint8_t *p = realloc(buf, cap = cap ? 2 * cap : 4096);

			if (!p) {
				fprintf(stderr, "replay: out of memory reading %s\n", path);
				free(buf);
				fclose(f);
				return -1;
			}
			buf = p;
		}
		n = fread(buf + len, 1, cap - len, f);
		len += n;
	} while (n > 0);
	fclose(f);
	fprintf(stderr, "replay: %s (%zu bytes)\n", path, len);
	LLVMFuzzerTestOneInput(buf ? buf : (const uint8_t *)"", len);
	free(buf);
	ran++;
	return 0;
}

static int run_path(const char *path)
{
	struct stat st;
	struct dirent **names;
	int n, rc = 0;

	if (stat(path, &st) != 0) {
		fprintf(stderr, "replay: no such file or directory: %s\n", path);
		return -1;
	}
	if (!S_ISDIR(st.st_mode))
		return run_file(path);
	n = scandir(path, &names, NULL, alphasort);
	if (n < 0) {
		fprintf(stderr, "replay: cannot list %s\n", path);
		return -1;
	}
	for (int i = 0; i < n; i++) {
		char sub[4096];
		struct stat s2;

		if (names[i]->d_name[0] != '.' &&
		    (size_t)snprintf(sub, sizeof(sub), "%s/%s", path, names[i]->d_name) < sizeof(sub) &&
		    stat(sub, &s2) == 0 && S_ISREG(s2.st_mode) && run_file(sub) != 0)
			rc = -1;
		free(names[i]);
	}
	free(names);
	return rc;
}

int main(int argc, char **argv)
{
	int rc = 0;

	for (int i = 1; i < argc; i++)
		if (argv[i][0] != '-' && run_path(argv[i]) != 0)
			rc = 1;
	fprintf(stderr, "replay: %u inputs ran without a failure\n", ran);
	return rc;
}

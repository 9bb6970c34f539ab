/* SPDX-License-Identifier: MIT */
/* `vhostlab serve`: options, start and clean shutdown of the vhost-user back end. */
#include <getopt.h>
#include <linux/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "serve.h"

static void serve_usage(FILE *out)
{
	fprintf(out,
		"NAME\n"
		"    vhostlab serve - a vhost-user virtio-net back end on the vhostlab core\n"
		"\n"
		"SYNOPSIS\n"
		"    vhostlab serve --socket PATH [--client] [--mode MODE] [--queues N] [options]\n"
		"\n"
		"DESCRIPTION\n"
		"    Serves a virtio-net device over a vhost-user Unix socket to a front end such as\n"
		"    QEMU or DPDK virtio-user, and moves its packets according to MODE. It runs until\n"
		"    SIGINT or SIGTERM (or --duration), then stops every ring, frees every packet,\n"
		"    closes every descriptor, prints the final statistics on stdout and exits.\n"
		"    \"rx\" counts what serve received from the front end (the guest's transmit\n"
		"    ring), \"tx\" what it sent to it (the guest's receive ring).\n"
		"\n"
		"OPTIONS\n"
		"    --socket PATH        the vhost-user socket (required). Server mode: serve\n"
		"                         listens there (a stale socket file is replaced) and\n"
		"                         takes one front end at a time, and the next one after it\n"
		"                         leaves.\n"
		"    --client             connect to PATH instead (a front end in server mode, e.g.\n"
		"                         virtio-user server=1); retried with back-off (20 ms up to\n"
		"                         0.5 s) until it answers, and again after it goes away\n"
		"    --mode MODE          loopback (default), rxonly, txonly, null, touch,\n"
		"                         tap:IFNAME, pair:SOCKET2 (see MODES)\n"
		"    --queues N           queue pairs, 1..128 (default 1); more than one offers\n"
		"                         VIRTIO_NET_F_MQ and the control queue\n"
		"    --threads N          run the queue pairs on N worker threads, 1..--queues:\n"
		"                         pair q on thread q %% N, with its own packet pool and no\n"
		"                         lock; this thread keeps the socket and pauses the workers\n"
		"                         around every message (not with tap or --record)\n"
		"    --size N             txonly frame size in bytes, 60..65535 (default 64)\n"
		"    --burst N            packets per burst, 1..256 (default 32)\n"
		"    --zero-copy          zero-copy dequeue: packets of 512 bytes or more reference\n"
		"                         guest memory instead of being copied\n"
		"    --evict WHEN         evict-after-read: after copying a packet from the guest,\n"
		"                         drop its first cache line from every cache, so the\n"
		"                         front end's next write there does not have to take it\n"
		"                         back from serve's CPU. Pays when the two CPUs are far\n"
		"                         apart, costs when close. WHEN: auto (default: each TX\n"
		"                         ring tries both when traffic starts, about once a\n"
		"                         second after and when its rate moves, and keeps the\n"
		"                         faster), on, off. Needs CLFLUSHOPT (x86); else off\n"
		"    --prefetch WHEN      payload prefetch: ask for each packet's first line from\n"
		"                         the guest a dozen chains before copying it. Pays when\n"
		"                         the two CPUs are far apart, costs a little when close.\n"
		"                         WHEN: auto (default: tried with --evict's, by the same\n"
		"                         trials, when both are auto), on, off\n"
		"    --line-wait WHEN     packed rings: a burst that finds the front end still\n"
		"                         filling a cache line of descriptors leaves that line's\n"
		"                         packets for the next burst, so serve does not write\n"
		"                         used descriptors into it meanwhile. WHEN: on (default),\n"
		"                         off\n"
		"    --batch-threshold N  copies of at most N bytes are batched per burst, 0 = off\n"
		"                         (default 256)\n"
		"    --poll               busy polling: never sleep, tell the guest not to kick and\n"
		"                         ignore kick eventfds (one CPU at 100%%). Default: sleep in\n"
		"                         poll() until a kick, a message or a short timeout\n"
		"    --idle-pause NS      with --poll: after a round that moved nothing, wait NS\n"
		"                         nanoseconds (spinning, 0..1000000) before polling again,\n"
		"                         so the front end's stores to the ring are not slowed by\n"
		"                         our reads of it (default %u; 0: poll again at once)\n"
		"    --stats-interval S   every S seconds (decimals allowed), one line per queue\n"
		"                         pair on stderr: rx and tx packets and packets per second,\n"
		"                         drops (default 0: none)\n"
		"    --duration S         stop by itself after S seconds (default 0: run until a\n"
		"                         signal)\n"
		"    --json               events and statistics lines on stderr as JSON lines, the\n"
		"                         final statistics as one JSON document on stdout\n"
		"    --quiet              no event lines on stderr (errors still)\n"
		"    --features HEX       offer exactly these virtio feature bits (a subset of\n"
		"                         0x%llx; default: all of them but MQ and CTRL_VQ).\n"
		"                         An offload without what it requires (TSO without\n"
		"                         checksum offload, ECN without TSO) is refused\n"
		"    --offloads WHEN      on (default): offer the offloads, and handle them when\n"
		"                         negotiated: CSUM, GUEST_CSUM (checksum offload both\n"
		"                         ways), HOST_TSO4, HOST_TSO6, HOST_ECN (the guest sends\n"
		"                         TCP frames up to 64 KiB), GUEST_TSO4, GUEST_TSO6,\n"
		"                         GUEST_ECN (it takes them), HOST_USO, GUEST_USO4,\n"
		"                         GUEST_USO6 (the same for UDP, virtio 1.2; in TAP mode\n"
		"                         only where the kernel's TAP takes them). Frames go on\n"
		"                         as they are where the other side negotiated the same\n"
		"                         (the other guest, or the TAP device, told with\n"
		"                         TUNSETOFFLOAD what the guest takes), else they are\n"
		"                         segmented or checksummed in software first. Not UFO.\n"
		"                         off: none of them is offered (the guest then segments\n"
		"                         and checksums itself)\n"
		"    --record FILE        record the session as a trace (docs/trace-format.md) that\n"
		"                         `vhostlab replay FILE` runs against the simulated guest:\n"
		"                         the memory layout, rings, every chain and byte the core\n"
		"                         read, each burst and what the front end got. The first\n"
		"                         connection is recorded until the bound below, until it\n"
		"                         leaves, or until serve stops; FILE is then written (to a\n"
		"                         temporary name, renamed into place) and serve goes on.\n"
		"                         Not with --zero-copy or pair mode, or more than %u\n"
		"                         queue pairs\n"
		"    --record-max-packets N  stop recording after N packets, both directions\n"
		"                         together (default %u)\n"
		"    --no-mrg-rxbuf, --no-packed, --no-in-order, --no-indirect, --no-event-idx,\n"
		"    --no-csum            do not offer that feature (--no-csum: CSUM and GUEST_CSUM,\n"
		"                         and so no TSO or USO, which need them)\n"
		"    -h, --help           this text\n"
		"\n"
		"MODES\n"
		"    loopback      what the front end sends on a queue pair comes back to it on the\n"
		"                  same pair, unchanged\n"
		"    rxonly        count what the front end sends, and drop it\n"
		"    txonly        send it broadcast IPv4/UDP frames of --size bytes (source\n"
		"                  198.18.0.1, discard port), as fast as it posts buffers; what it\n"
		"                  sends is counted and dropped\n"
		"    null          a ceiling, not a forwarder: every chain the front end sends\n"
		"                  goes back at once, unread (counted as rx, bytes from the\n"
		"                  descriptors); its receive ring is left alone\n"
		"    touch         null, but the first byte of each packet (after the virtio-net\n"
		"                  header) is read: the least a back end that reads packets can\n"
		"                  do. Beside null, it shows what that one cache line costs\n"
		"    tap:IFNAME    bridge to the Linux TAP device IFNAME (created if missing, then\n"
		"                  brought up; needs CAP_NET_ADMIN): the guest talks to the host's\n"
		"                  network stack. Run it inside a network namespace of its own.\n"
		"    pair:SOCKET2  a second device on SOCKET2 (same server/client mode): what one\n"
		"                  front end sends, the other receives, pair n to pair n\n"
		"    Packets bound for a guest wait while its receive ring is full, and its sender\n"
		"    is not read meanwhile: nothing is lost to a slow receiver. What waits for a\n"
		"    front end that is not connected, or that leaves, is dropped (no_peer).\n"
		"\n"
		"OUTPUT\n"
		"    stderr: events (listening, connected, running with the negotiated features,\n"
		"    disconnected with the last request, rejected messages, broken queues) and the\n"
		"    --stats-interval lines. stdout, at the end: per socket and queue pair rx/tx\n"
		"    packets and bytes, drops, kicks and calls; the drop reasons (malformed,\n"
		"    too_big, no_peer, tap, no_memory); and packet buffers not returned.\n"
		"\n"
		"EXIT STATUS\n"
		"    0  stopped by a signal or --duration, and every packet buffer came back\n"
		"    1  the socket, TAP device or device could not be set up, a fatal poll error,\n"
		"       packet buffers were not returned, or the --record trace could not be\n"
		"       written\n"
		"    2  usage error (the message names the bad option or value)\n"
		"\n"
		"EXAMPLES\n"
		"    vhostlab serve --socket /tmp/vhl.sock --mode rxonly --stats-interval 1\n"
		"    dpdk-testpmd --no-huge -m 256 --no-pci --file-prefix=fe --lcores '0@1,1@1' \\\n"
		"        --vdev 'net_virtio_user0,path=/tmp/vhl.sock,queues=1' \\\n"
		"        -- --total-num-mbufs=16384 --forward-mode=txonly --stats-period=1\n"
		"\n"
		"    See docs/serve.md for QEMU and the other modes.\n",
		SERVE_IDLE_PAUSE_DEFAULT_NS, (unsigned long long)VL_VU_FEATURES_SUPPORTED,
		SERVE_RECORD_MAX_PAIRS,
		SERVE_RECORD_MAX_PACKETS_DEFAULT);
	fprintf(out, "\nCORE\n%s\n", cli_lab_core_note() ?
		"    This is vhostlab, the lab program: serve runs on the lab build of the core\n"
		"    (guest-load hooks; slower) and says so on stderr (event \"core\", even with\n"
		"    --quiet). --record needs that build. vhostlab-fast serve is the production\n"
		"    program for serving and benchmarking." :
		"    This is vhostlab-fast, the production program: serve runs on the production\n"
		"    core (libvhostlab's objects, no lab hooks). --record needs the lab build of\n"
		"    the core: vhostlab serve --record.");
}

enum {
	OPT_SOCKET = 256,
	OPT_CLIENT,
	OPT_MODE,
	OPT_QUEUES,
	OPT_SIZE,
	OPT_BURST,
	OPT_ZERO_COPY,
	OPT_EVICT,
	OPT_PREFETCH,
	OPT_LINE_WAIT,
	OPT_BATCH,
	OPT_POLL,
	OPT_STATS,
	OPT_DURATION,
	OPT_JSON,
	OPT_QUIET,
	OPT_FEATURES,
	OPT_NO_MRG,
	OPT_NO_PACKED,
	OPT_NO_IN_ORDER,
	OPT_NO_INDIRECT,
	OPT_NO_EVENT_IDX,
	OPT_NO_CSUM,
	OPT_RECORD,
	OPT_RECORD_MAX,
	OPT_IDLE_PAUSE,
	OPT_OFFLOADS,
	OPT_THREADS,
};

static const struct option long_opts[] = {
	{"socket", required_argument, NULL, OPT_SOCKET},
	{"client", no_argument, NULL, OPT_CLIENT},
	{"mode", required_argument, NULL, OPT_MODE},
	{"queues", required_argument, NULL, OPT_QUEUES},
	{"threads", required_argument, NULL, OPT_THREADS},
	{"size", required_argument, NULL, OPT_SIZE},
	{"burst", required_argument, NULL, OPT_BURST},
	{"zero-copy", no_argument, NULL, OPT_ZERO_COPY},
	{"evict", required_argument, NULL, OPT_EVICT},
	{"prefetch", required_argument, NULL, OPT_PREFETCH},
	{"line-wait", required_argument, NULL, OPT_LINE_WAIT},
	{"batch-threshold", required_argument, NULL, OPT_BATCH},
	{"poll", no_argument, NULL, OPT_POLL},
	{"idle-pause", required_argument, NULL, OPT_IDLE_PAUSE},
	{"stats-interval", required_argument, NULL, OPT_STATS},
	{"duration", required_argument, NULL, OPT_DURATION},
	{"json", no_argument, NULL, OPT_JSON},
	{"quiet", no_argument, NULL, OPT_QUIET},
	{"features", required_argument, NULL, OPT_FEATURES},
	{"no-mrg-rxbuf", no_argument, NULL, OPT_NO_MRG},
	{"no-packed", no_argument, NULL, OPT_NO_PACKED},
	{"no-in-order", no_argument, NULL, OPT_NO_IN_ORDER},
	{"no-indirect", no_argument, NULL, OPT_NO_INDIRECT},
	{"no-event-idx", no_argument, NULL, OPT_NO_EVENT_IDX},
	{"no-csum", no_argument, NULL, OPT_NO_CSUM},
	{"offloads", required_argument, NULL, OPT_OFFLOADS},
	{"record", required_argument, NULL, OPT_RECORD},
	{"record-max-packets", required_argument, NULL, OPT_RECORD_MAX},
	{"help", no_argument, NULL, 'h'},
	{NULL, 0, NULL, 0},
};

static bool parse_mode(const char *v, struct serve_opts *o)
{
	if (!strcmp(v, "loopback")) {
		o->mode = SERVE_LOOPBACK;
	} else if (!strcmp(v, "rxonly")) {
		o->mode = SERVE_RXONLY;
	} else if (!strcmp(v, "txonly")) {
		o->mode = SERVE_TXONLY;
	} else if (!strcmp(v, "null")) {
		o->mode = SERVE_NULL;
	} else if (!strcmp(v, "touch")) {
		o->mode = SERVE_TOUCH;
	} else if (!strncmp(v, "tap:", 4)) {
		o->mode = SERVE_TAP;
		o->tap_name = v + 4;
		if (o->tap_name[0] == '\0' || strlen(o->tap_name) >= IFNAMSIZ ||
		    strchr(o->tap_name, '/')) {
			cli_usage_error("serve",
					"--mode: '%s': '%s' is not an interface name (1..%d "
					"characters, no '/')",
					v, o->tap_name, IFNAMSIZ - 1);
			return false;
		}
	} else if (!strncmp(v, "pair:", 5)) {
		o->mode = SERVE_PAIR;
		o->socket2 = v + 5;
		if (o->socket2[0] == '\0') {
			cli_usage_error("serve", "--mode: 'pair:' needs a socket path");
			return false;
		}
	} else {
		cli_usage_error("serve",
				"--mode: '%s' is not one of loopback, rxonly, txonly, null, touch, "
				"tap:IFNAME, pair:SOCKET2",
				v);
		return false;
	}
	return true;
}

/* Seconds: a decimal number in [0, 1e6]. */
static bool parse_seconds(const char *opt, const char *v, double *out)
{
	char *end;
	double d = strtod(v, &end);

	if (v[0] == '\0' || *end != '\0' || !(d >= 0 && d <= 1e6)) {
		cli_usage_error("serve", "%s: '%s' is not a number of seconds in [0, 1000000]", opt,
				v);
		return false;
	}
	*out = d;
	return true;
}

static bool parse_features(const char *v, uint64_t *out)
{
	char *end;
	unsigned long long f;

	if (v[0] == '\0' || v[0] == '-')
		goto bad;
	f = strtoull(v, &end, 16);
	if (*end != '\0')
		goto bad;
	if (f & ~VL_VU_FEATURES_SUPPORTED) {
		cli_usage_error("serve",
				"--features: %s asks for bits 0x%llx that vhostlab does not "
				"implement (supported: 0x%llx)",
				v, f & ~(unsigned long long)VL_VU_FEATURES_SUPPORTED,
				(unsigned long long)VL_VU_FEATURES_SUPPORTED);
		return false;
	}
	char why[128];

	if (serve_features_unmet(f, why, sizeof(why))) {
		cli_usage_error("serve", "--features %s: %s, which it does not offer", v, why);
		return false;
	}
	*out = f;
	return true;
bad:
	cli_usage_error("serve", "--features: '%s' is not a hexadecimal number", v);
	return false;
}

/* --record: what a trace can hold. One guest memory per trace (not pair mode); chains the
 * core returns in the burst that took them (not zero-copy, whose leases outlive bursts); a
 * burst statement for every guest-visible change (not null mode's discard); 16 queues. */
static bool check_record(struct serve_opts *o)
{
	const char *why = NULL;

	if (!o->record) {
		if (o->record_max_packets) {
			cli_usage_error("serve", "--record-max-packets needs --record FILE");
			return false;
		}
		return true;
	}
	if (o->record[0] == '\0')
		why = "--record: the file name is empty";
	else if (o->zero_copy)
		why = "--record cannot record --zero-copy (chains held by packets across bursts "
		      "have no trace statement here); drop one of them";
	else if (o->mode == SERVE_PAIR)
		why = "--record cannot record pair mode: a trace holds one guest's memory";
	else if (o->queues > SERVE_RECORD_MAX_PAIRS)
		why = "--record holds at most 8 queue pairs (a trace has 16 queues)";
#ifndef VL_LAB_BUILD
	else
		why = "--record needs the core with lab hooks: run `vhostlab serve`, not "
		      "vhostlab-fast";
#endif
	if (why) {
		cli_usage_error("serve", "%s", why);
		return false;
	}
	if (!o->record_max_packets)
		o->record_max_packets = SERVE_RECORD_MAX_PACKETS_DEFAULT;
	return true;
}

/* Parse argv into o. Returns -1 to go on, else the exit status (help, usage error). */
/* --evict / --prefetch WHEN: auto, on or off. */
static bool parse_when(enum serve_evict *out, const char *opt, const char *v)
{
	if (strcmp(v, "auto") == 0) {
		*out = SERVE_EVICT_AUTO;
	} else if (strcmp(v, "on") == 0) {
		*out = SERVE_EVICT_ON;
	} else if (strcmp(v, "off") == 0) {
		*out = SERVE_EVICT_OFF;
	} else {
		cli_usage_error("serve", "%s '%s': expected auto, on or off", opt, v);
		return false;
	}
	return true;
}

static int parse(int argc, char **argv, struct serve_opts *o)
{
	uint64_t v, off = 0;
	bool explicit_features = false;
	struct vl_vu_config defaults;

	vl_vu_config_init(&defaults);
	*o = (struct serve_opts){.mode = SERVE_LOOPBACK, .queues = 1, .size = 64,
				 .burst = SERVE_BURST_DEFAULT,
				 .idle_pause_ns = SERVE_IDLE_PAUSE_DEFAULT_NS,
				 .batch_threshold = VL_BATCH_THRESHOLD_DEFAULT,
				 .features = defaults.features};
	optind = 1;
	opterr = 0;
	for (;;) {
		int c = getopt_long(argc, argv, ":h", long_opts, NULL);

		if (c == -1)
			break;
		switch (c) {
		case 'h':
			serve_usage(stdout);
			return CLI_EXIT_OK;
		case OPT_SOCKET:
			o->socket = optarg;
			break;
		case OPT_CLIENT:
			o->client = true;
			break;
		case OPT_MODE:
			if (!parse_mode(optarg, o))
				return CLI_EXIT_USAGE;
			break;
		case OPT_QUEUES:
			if (!cli_parse_u64("serve", "--queues", optarg, 1, VL_VU_MAX_QUEUE_PAIRS, &v))
				return CLI_EXIT_USAGE;
			o->queues = (uint32_t)v;
			break;
		case OPT_THREADS:
			if (!cli_parse_u64("serve", "--threads", optarg, 1, VL_VU_MAX_QUEUE_PAIRS, &v))
				return CLI_EXIT_USAGE;
			o->threads = (uint32_t)v;
			break;
		case OPT_SIZE:
			if (!cli_parse_u64("serve", "--size", optarg, SERVE_GEN_MIN_SIZE,
					   VL_PKT_MAX_LEN, &v))
				return CLI_EXIT_USAGE;
			o->size = (uint32_t)v;
			break;
		case OPT_BURST:
			if (!cli_parse_u64("serve", "--burst", optarg, 1, SERVE_BURST_MAX, &v))
				return CLI_EXIT_USAGE;
			o->burst = (uint32_t)v;
			break;
		case OPT_ZERO_COPY:
			o->zero_copy = true;
			break;
		case OPT_EVICT:
		case OPT_PREFETCH:
			if (!parse_when(c == OPT_EVICT ? &o->evict : &o->prefetch,
					c == OPT_EVICT ? "--evict" : "--prefetch", optarg))
				return CLI_EXIT_USAGE;
			break;
		case OPT_LINE_WAIT:
			if (strcmp(optarg, "on") == 0 || strcmp(optarg, "off") == 0) {
				o->line_wait_off = strcmp(optarg, "off") == 0;
				break;
			}
			cli_usage_error("serve", "--line-wait '%s': expected on or off", optarg);
			return CLI_EXIT_USAGE;
		case OPT_BATCH:
			if (!cli_parse_u64("serve", "--batch-threshold", optarg, 0, 65536, &v))
				return CLI_EXIT_USAGE;
			o->batch_threshold = (uint32_t)v;
			break;
		case OPT_POLL:
			o->busy_poll = true;
			break;
		case OPT_IDLE_PAUSE:
			if (!cli_parse_u64("serve", "--idle-pause", optarg, 0, 1000000, &v))
				return CLI_EXIT_USAGE;
			o->idle_pause_ns = (uint32_t)v;
			break;
		case OPT_STATS:
			if (!parse_seconds("--stats-interval", optarg, &o->stats_interval))
				return CLI_EXIT_USAGE;
			break;
		case OPT_DURATION:
			if (!parse_seconds("--duration", optarg, &o->duration))
				return CLI_EXIT_USAGE;
			break;
		case OPT_JSON:
			o->json = true;
			break;
		case OPT_QUIET:
			o->quiet = true;
			break;
		case OPT_FEATURES:
			if (!parse_features(optarg, &o->features))
				return CLI_EXIT_USAGE;
			explicit_features = true;
			break;
		case OPT_NO_MRG:
			off |= VL_FEATURE(VL_F_NET_MRG_RXBUF);
			break;
		case OPT_NO_PACKED:
			off |= VL_FEATURE(VL_F_RING_PACKED);
			break;
		case OPT_NO_IN_ORDER:
			off |= VL_FEATURE(VL_F_IN_ORDER);
			break;
		case OPT_NO_INDIRECT:
			off |= VL_FEATURE(VL_F_RING_INDIRECT_DESC);
			break;
		case OPT_NO_EVENT_IDX:
			off |= VL_FEATURE(VL_F_RING_EVENT_IDX);
			break;
		case OPT_RECORD:
			o->record = optarg;
			break;
		case OPT_RECORD_MAX:
			if (!cli_parse_u64("serve", "--record-max-packets", optarg, 1, 10000000, &v))
				return CLI_EXIT_USAGE;
			o->record_max_packets = v;
			break;
		case OPT_NO_CSUM:
			off |= VL_FEATURE(VL_F_NET_CSUM) | VL_FEATURE(VL_F_NET_GUEST_CSUM);
			break;
		case OPT_OFFLOADS:
			if (strcmp(optarg, "on") == 0 || strcmp(optarg, "off") == 0) {
				o->offloads_off = strcmp(optarg, "off") == 0;
				break;
			}
			cli_usage_error("serve", "--offloads '%s': expected on or off", optarg);
			return CLI_EXIT_USAGE;
		case ':':
			cli_usage_error("serve", "option '%s' needs a value", argv[optind - 1]);
			return CLI_EXIT_USAGE;
		default:
			cli_usage_error("serve", "unknown option '%s' (try `vhostlab serve --help`)",
					argv[optind - 1]);
			return CLI_EXIT_USAGE;
		}
	}
	if (optind < argc) {
		cli_usage_error("serve", "unexpected argument '%s'", argv[optind]);
		return CLI_EXIT_USAGE;
	}
	if (!o->socket || o->socket[0] == '\0') {
		cli_usage_error("serve", "--socket PATH is required");
		return CLI_EXIT_USAGE;
	}
	if (o->mode == SERVE_PAIR && !strcmp(o->socket, o->socket2)) {
		cli_usage_error("serve", "--mode pair:%s: the second socket must differ from --socket",
				o->socket2);
		return CLI_EXIT_USAGE;
	}
	/* Several queue pairs need the front end to know how many: MQ, and the control queue
	 * it sets the number through (QEMU and virtio-user handle that queue themselves). */
	if (o->queues > 1 && !explicit_features)
		o->features |= VL_FEATURE(VL_F_NET_MQ) | VL_FEATURE(VL_F_NET_CTRL_VQ);
	if (o->queues > 1 && !(o->features & VL_FEATURE(VL_F_NET_MQ))) {
		cli_usage_error("serve", "--queues %u needs VIRTIO_NET_F_MQ (bit %d) in --features",
				o->queues, VL_F_NET_MQ);
		return CLI_EXIT_USAGE;
	}
	if (o->threads > o->queues) {
		cli_usage_error("serve", "--threads %u is more than --queues %u: each worker thread "
				"owns whole queue pairs, so %u would have none", o->threads, o->queues,
				o->threads - o->queues);
		return CLI_EXIT_USAGE;
	}
	if (o->threads && (o->mode == SERVE_TAP || o->record)) {
		cli_usage_error("serve", "--threads %u with %s: not supported (the TAP device's "
				"reads and the recorder run on the poll loop's thread)", o->threads,
				o->mode == SERVE_TAP ? "--mode tap" : "--record");
		return CLI_EXIT_USAGE;
	}
	if (o->offloads_off)
		off |= SERVE_OFFLOAD_FEATURES;
	/* What the --no-* options took away may leave offloads without what they need. */
	o->features = serve_features_prune(o->features & ~off);
	return check_record(o) ? -1 : CLI_EXIT_USAGE;
}

int cmd_serve(int argc, char **argv)
{
	struct serve s;
	int rc;

	memset(&s, 0, sizeof(s));
	rc = parse(argc, argv, &s.o);
	if (rc >= 0)
		return rc;
	s.start = serve_now();
	s.nports = s.o.mode == SERVE_PAIR ? 2 : 1;
	/* The lab program says which core it serves on (event "core", even with --quiet). */
	if (cli_lab_core_note())
		serve_event(&s, "core", NULL, "%s", cli_lab_core_note());

	bool ok = s.o.mode != SERVE_TAP || serve_tap_open(&s, s.o.tap_name, s.o.queues);

	/* A TAP device that cannot take UDP segmentation (before Linux 6.2) could neither
	 * pass the guest's USO frames on nor hand it any: those features are not offered. */
	if (ok && s.o.mode == SERVE_TAP && !s.tap_uso && (s.o.features & SERVE_USO_FEATURES)) {
		s.o.features &= ~SERVE_USO_FEATURES;
		serve_event(&s, "tap", NULL,
			    "this kernel's TAP takes no UDP segmentation (TUN_F_USO4/6, Linux "
			    "6.2): host_uso, guest_uso4, guest_uso6 not offered");
	}

	for (uint32_t i = 0; ok && i < s.nports; i++)
		ok = serve_port_open(&s, &s.port[i], i, i ? s.o.socket2 : s.o.socket) == 0;
	if (ok && s.o.record)
		ok = serve_rec_open(&s);

	if (ok)
		ok = serve_threads_start(&s);

	const char *why = ok ? serve_loop(&s) : NULL;
	uint32_t leaked = 0;

	/* The workers end first: what follows runs on this thread alone. */
	serve_threads_stop(&s);

	/* Before the devices go: the recording ends with the last burst serve ran. */
	serve_rec_close(&s, why ? why : "error");

	/* Waiting packets first (zero-copy ones point into rings that are about to stop),
	 * then the devices, then the pools: what is still out of a pool then is a leak. */
	serve_fwd_flush_all(&s);
	for (uint32_t i = 0; i < s.nports; i++)
		leaked += serve_port_close(&s.port[i]);
	serve_tap_close(&s);
	if (ok)
		serve_stats_final(&s, serve_now(), why ? why : "error", leaked);
	for (uint32_t i = 0; i < s.nports; i++)
		serve_port_free(&s.port[i]);
	bool rec_ok = !serve_rec_failed(&s);

	serve_rec_free(&s);
	return ok && why && leaked == 0 && rec_ok ? CLI_EXIT_OK : CLI_EXIT_FAIL;
}

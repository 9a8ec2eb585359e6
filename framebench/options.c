/*
 * tunbed-framebench's command line (see options.h).
 */
#include "options.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "log.h"
#include "opt.h"
#include "parse.h"

#ifndef TUNBED_VERSION
#define TUNBED_VERSION "0"
#endif

enum {
	O_DEV = 256,
	O_VIA,
	O_DST_MAC,
	O_CSUM,
	O_SECONDS,
	O_FRAMES,
	O_LEN,
	O_VERIFY,
	O_ANY_INTERFACE,
	O_END,
};

static const struct option opts[] = {
	{ "dev", required_argument, NULL, O_DEV },
	{ "via", required_argument, NULL, O_VIA },
	{ "dst-mac", required_argument, NULL, O_DST_MAC },
	{ "csum", required_argument, NULL, O_CSUM },
	{ "seconds", required_argument, NULL, O_SECONDS },
	{ "frames", required_argument, NULL, O_FRAMES },
	{ "len", required_argument, NULL, O_LEN },
	{ "verify", no_argument, NULL, O_VERIFY },
	{ "any-interface", no_argument, NULL, O_ANY_INTERFACE },
	OPT_COMMON,
};

static const char *const send_names[] = {
	[SEND_MMSG] = "mmsg", [SEND_TXRING] = "txring", [SEND_XSK] = "xsk"
};
static const char *const recv_names[] = {
	[RECV_RING] = "ring", [RECV_XDP] = "xdp", [RECV_XDP_GENERIC] = "xdp-generic"
};

enum { SECONDS_DEFAULT = 5, SECONDS_MAX = 3600, DEV_NAME_MAX = 15 };

static void usage(void)
{
	printf("usage: tunbed-framebench send --dev DEV --dst-mac MAC [--via WAY] [options]\n"
	       "       tunbed-framebench recv --dev DEV [--via WAY] [--verify]\n"
	       "\n"
	       "Measures what the kernel's frame interfaces cost a gateway: full-sized GRE\n"
	       "frames sent out of one interface and taken in on another (a veth pair), each end\n"
	       "one of the ways a userspace gateway can use. Run recv first; it writes one JSON\n"
	       "line {\"ready\": true} once it takes frames, and its counts as one JSON line at\n"
	       "SIGINT or SIGTERM. send writes its counts as one JSON line when it is done.\n"
	       "scripts/bench/frame_paths.py runs the pairs in namespaces and reports the CPU\n"
	       "time each frame cost (docs/framebench.md).\n"
	       "\n"
	       "  --dev DEV          the interface to send out of, or to take frames from\n"
	       "  --any-interface    use DEV whatever it is; otherwise only a veth or TAP in a\n"
	       "                     network namespace other than the initial one\n"
	       "send:\n"
	       "  --via WAY          mmsg: sendmmsg on an AF_PACKET socket (gregw's; default),\n"
	       "                     txring: an AF_PACKET TX ring, xsk: AF_XDP, copy mode\n"
	       "  --dst-mac MAC      the frames' Ethernet destination (the peer's address), a\n"
	       "                     unicast one\n"
	       "  --csum HOW         partial: the inner TCP checksum left to the device, in the\n"
	       "                     virtio header (default; not with xsk); full: completed in\n"
	       "                     software for every frame (the default with xsk)\n"
	       "  --seconds S        send for S seconds (default %d, or none with --frames)\n"
	       "  --frames N         stop after N frames, or at --seconds if that comes first\n"
	       "  --len N            the frame's length with its Ethernet header, %d to %d\n"
	       "                     (default %d)\n"
	       "recv:\n"
	       "  --via WAY          ring: a TPACKET_V2 ring, GRE dropped at tc ingress\n"
	       "                     (gregw's; default), xdp: AF_XDP at the driver's XDP hook,\n"
	       "                     xdp-generic: AF_XDP at the kernel's generic XDP hook\n"
	       "  --verify           sum every inner TCP checksum the kernel did not vouch for\n"
	       "                     (with ring, it says which were left partial; AF_XDP cannot)\n"
	       "\n"
	       "  -v, --verbose      on stderr: what it sets up, before it starts\n"
	       "  -h, --help         this text\n"
	       "  -V, --version      the version\n"
	       "\n"
	       "Exit status: 0 done; 1 a socket, ring or BPF program the kernel refused; 2 bad\n"
	       "usage (one line), also an interface that is not a test's link or a destination\n"
	       "that is not unicast.\n",
	       SECONDS_DEFAULT, FRAME_HLEN, ETH_FRAME_LEN, ETH_FRAME_LEN);
}

static int pick(const char *const *names, unsigned n, const char *v, const char *opt,
		const char *expect)
{
	for (unsigned i = 0; i < n; i++)
		if (strcmp(names[i], v) == 0)
			return (int)i;
	return opt_bad(opt, v, expect);
}

static int parse_mac(const char *v, uint8_t mac[ETH_ALEN])
{
	unsigned b[ETH_ALEN];
	char end;

	if (sscanf(v, "%2x:%2x:%2x:%2x:%2x:%2x%c", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5],
		   &end) != ETH_ALEN)
		return -EINVAL;
	for (unsigned i = 0; i < ETH_ALEN; i++)
		mac[i] = (uint8_t)b[i];
	return 0;
}

static int apply(void *ctx, int id, const char *name, const char *v)
{
	struct fb_options *o = ctx;
	uint64_t n;
	int way;

	switch (id) {
	case O_DEV:
		if (!*v || strlen(v) > DEV_NAME_MAX || strchr(v, '/'))
			return opt_bad(name, v, "expected an interface name");
		o->dev = v;
		return 0;
	case O_VIA:
		if (o->cmd == FB_SEND) {
			way = pick(send_names, 3, v, name, "expected mmsg, txring or xsk");
			o->send.via = (enum send_via)way;
		} else {
			way = pick(recv_names, 3, v, name, "expected ring, xdp or xdp-generic");
			o->recv.via = (enum recv_via)way;
		}
		return way < 0 ? way : 0;
	case O_DST_MAC:
		if (parse_mac(v, o->send.frame.dst))
			return opt_bad(name, v,
				       "expected an Ethernet address, as 02:00:00:00:00:01");
		/* The group bit (IEEE 802, the first octet's lowest): every station of the link
		 * would take the frames, and a bridge would flood them. */
		if (o->send.frame.dst[0] & 1)
			return opt_bad(name, v,
				       "a broadcast or multicast address: expected a unicast one");
		return 0;
	case O_CSUM:
		if (strcmp(v, "partial") && strcmp(v, "full"))
			return opt_bad(name, v, "expected partial or full");
		o->send.csum_full = strcmp(v, "full") == 0;
		return 0;
	case O_SECONDS:
		return opt_seconds(name, v, 0.1, SECONDS_MAX, &o->seconds);
	case O_FRAMES:
		if (parse_u64(v, 1, UINT64_MAX, &n))
			return opt_bad(name, v, "expected a count from 1");
		o->send.frames = n;
		return 0;
	case O_LEN:
		if (parse_u64(v, FRAME_HLEN, ETH_FRAME_LEN, &n)) {
			char expect[48];

			snprintf(expect, sizeof(expect), "expected %d to %d", FRAME_HLEN,
				 ETH_FRAME_LEN);
			return opt_bad(name, v, expect);
		}
		o->send.frame.len = (size_t)n;
		return 0;
	case O_VERIFY:
		o->recv.verify = true;
		return 0;
	case O_ANY_INTERFACE:
		o->any_interface = true;
		return 0;
	}
	return -EINVAL;
}

/* Options of the other subcommand, named so that a slip gets a line, not a surprise. */
static int check_given(struct fb_options *o, const bool *given)
{
	static const int send_only[] = { O_DST_MAC, O_CSUM, O_SECONDS, O_FRAMES, O_LEN };

	for (unsigned i = 0; i < sizeof(send_only) / sizeof(send_only[0]); i++)
		if (o->cmd == FB_RECV && given[send_only[i] - O_DEV]) {
			log_warnx("--%s is an option of send (see --help)",
				  opts[send_only[i] - O_DEV].name);
			return -EINVAL;
		}
	if (o->cmd == FB_SEND && given[O_VERIFY - O_DEV]) {
		log_warnx("--verify is an option of recv (see --help)");
		return -EINVAL;
	}
	if (!o->dev) {
		log_warnx("--dev is needed (see --help)");
		return -EINVAL;
	}
	if (o->cmd == FB_SEND && !given[O_DST_MAC - O_DEV]) {
		log_warnx("--dst-mac is needed (see --help)");
		return -EINVAL;
	}
	if (o->cmd == FB_SEND && !given[O_CSUM - O_DEV])
		o->send.csum_full = !send_can_partial(o->send.via);
	return 0;
}

int fb_options_parse(struct fb_options *o, int argc, char **argv)
{
	bool given[O_END - O_DEV] = { false };
	const struct opt_cli cli = {
		.prog = "tunbed-framebench",
		.version = TUNBED_VERSION,
		.opts = opts,
		.base = O_DEV,
		.usage = usage,
		.apply = apply,
		.ctx = o,
		.given = given,
		.verbose = &o->verbose,
		.own_errors = true,
	};
	int rc;

	memset(o, 0, sizeof(*o));
	o->send.frame.len = ETH_FRAME_LEN;
	if (argc >= 2 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) {
		usage();
		return 1;
	}
	if (argc >= 2 && (strcmp(argv[1], "-V") == 0 || strcmp(argv[1], "--version") == 0)) {
		printf("tunbed-framebench %s\n", TUNBED_VERSION);
		return 1;
	}
	if (argc < 2 || (strcmp(argv[1], "send") && strcmp(argv[1], "recv"))) {
		log_warnx("expected a subcommand, send or recv%s%s%s (see --help)",
			  argc >= 2 ? ", not '" : "", argc >= 2 ? argv[1] : "",
			  argc >= 2 ? "'" : "");
		return -EINVAL;
	}
	o->cmd = strcmp(argv[1], "send") == 0 ? FB_SEND : FB_RECV;
	optind = 2;
	rc = opt_parse(&cli, argc, argv);
	if (rc)
		return rc;
	if (optind < argc) {
		log_warnx("unexpected argument '%s' (see --help)", argv[optind]);
		return -EINVAL;
	}
	rc = check_given(o, given);
	if (rc)
		return rc;
	if (o->cmd == FB_SEND && o->send.csum_full == false && !send_can_partial(o->send.via)) {
		log_warnx("--via xsk cannot leave a checksum partial: AF_XDP in copy mode carries "
			  "no virtio header (use --csum full)");
		return -EINVAL;
	}
	if (o->cmd == FB_SEND && !given[O_SECONDS - O_DEV] && !o->send.frames)
		o->seconds = SECONDS_DEFAULT;
	return 0;
}

const char *fb_send_via_name(enum send_via via)
{
	return send_names[via];
}

const char *fb_recv_via_name(enum recv_via via)
{
	return recv_names[via];
}

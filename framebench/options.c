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
	O_ENCAP,
	O_SEGS,
	O_REDIRECT,
	O_ANY_INTERFACE,
	O_NO_DROP,
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
	{ "encap", required_argument, NULL, O_ENCAP },
	{ "segs", required_argument, NULL, O_SEGS },
	{ "redirect", required_argument, NULL, O_REDIRECT },
	{ "any-interface", no_argument, NULL, O_ANY_INTERFACE },
	{ "no-drop", no_argument, NULL, O_NO_DROP },
	OPT_COMMON,
};

static const char *const send_names[] = {
	[SEND_MMSG] = "mmsg", [SEND_TXRING] = "txring", [SEND_XSK] = "xsk", [SEND_TAP] = "tap"
};
static const char *const recv_names[] = { [RECV_RING] = "ring",
					  [RECV_XDP] = "xdp",
					  [RECV_XDP_GENERIC] = "xdp-generic",
					  [RECV_VNET] = "vnet" };
static const char *const encap_names[] = { [FRAME_GRE] = "gre", [FRAME_GRE_UDP] = "gre-udp" };

enum { SECONDS_DEFAULT = 5, SECONDS_MAX = 3600, DEV_NAME_MAX = 15 };

static void usage(void)
{
	printf("usage: tunbed-framebench send --dev DEV --dst-mac MAC [--via WAY] [options]\n"
	       "       tunbed-framebench send --via tap --dev TAP --dst-mac MAC [--encap ENCAP]\n"
	       "                              [--redirect DEV] [--segs N] [options]\n"
	       "       tunbed-framebench recv --dev DEV [--via WAY] [--frames N] [--verify] "
	       "[--no-drop]\n"
	       "\n"
	       "Measures what the kernel's frame interfaces cost a gateway: full-sized GRE\n"
	       "frames sent out of one interface and taken in on another (a veth pair), each end\n"
	       "one of the ways a userspace gateway can use; or superpackets written into a TAP\n"
	       "that the kernel carries whole, or cuts into frames, on their way out. Run recv\n"
	       "first; it writes one JSON line {\"ready\": true} once it takes frames, and its\n"
	       "counts as one JSON line at SIGINT or SIGTERM (or once --frames are taken). send\n"
	       "writes its counts as one JSON line when it is done. scripts/bench/frame_paths.py\n"
	       "runs the pairs in namespaces and reports the CPU time each frame cost\n"
	       "(docs/framebench.md).\n"
	       "\n"
	       "  --dev DEV          the interface to send out of (with tap: the TAP to write\n"
	       "                     into), or to take frames from\n"
	       "  --any-interface    use DEV (and --redirect's) whatever it is; otherwise only\n"
	       "                     a veth or TAP in a network namespace other than the\n"
	       "                     initial one\n"
	       "send:\n"
	       "  --via WAY          mmsg: sendmmsg on an AF_PACKET socket (gregw's; default),\n"
	       "                     txring: an AF_PACKET TX ring, xsk: AF_XDP, copy mode,\n"
	       "                     tap: superpackets written into a TAP with a virtio header\n"
	       "  --dst-mac MAC      the frames' Ethernet destination (the peer's address; with\n"
	       "                     tap and no --redirect, the TAP's own); a unicast address\n"
	       "  --csum HOW         partial: the inner TCP checksum left to the device, in the\n"
	       "                     virtio header (default; not with xsk); full: completed in\n"
	       "                     software for every frame (the default with xsk; not with\n"
	       "                     tap)\n"
	       "  --seconds S        send for S seconds (default %d, or none with --frames)\n"
	       "  --frames N         stop after N frames (with tap: superpackets), or at\n"
	       "                     --seconds if that comes first\n"
	       "  --len N            the frame's length with its Ethernet header, %d to %d\n"
	       "                     (default %d); with tap, each segment's on the wire\n"
	       "tap:\n"
	       "  --encap ENCAP      gre-udp: GRE-in-UDP superpackets with the virtio header's\n"
	       "                     UDP tunnel GSO (Linux 6.17); gre (default): the inner TCP\n"
	       "                     superpacket, which a tcx program puts in GRE\n"
	       "  --redirect DEV     a tcx program at the TAP's ingress redirects every\n"
	       "                     superpacket to DEV, which sends it; without, the namespace\n"
	       "                     routes it (the TAP is a router's port)\n"
	       "  --segs N           segments a superpacket carries (default: as many as an\n"
	       "                     IPv4 packet of 65535 bytes holds, 45 at --len %d)\n"
	       "recv:\n"
	       "  --via WAY          ring: a TPACKET_V2 ring, GRE dropped at tc ingress\n"
	       "                     (gregw's; default), xdp: AF_XDP at the driver's XDP hook,\n"
	       "                     xdp-generic: AF_XDP at the kernel's generic XDP hook,\n"
	       "                     vnet: a TPACKET_V2 ring with the virtio header of each\n"
	       "                     frame (GRE and GRE-in-UDP): superpackets and their gso_size\n"
	       "  --no-drop          vnet: leave the frames to the stack too (no tcx drop), as\n"
	       "                     beside a gateway that takes them\n"
	       "  --frames N         stop once N frames are taken (default: at the signal)\n"
	       "  --verify           sum every inner TCP checksum the kernel did not vouch for\n"
	       "                     (with ring, it says which were left partial; AF_XDP cannot;\n"
	       "                     not with vnet: its slots hold a superpacket's headers)\n"
	       "\n"
	       "  -v, --verbose      on stderr: what it sets up, before it starts\n"
	       "  -h, --help         this text\n"
	       "  -V, --version      the version\n"
	       "\n"
	       "Exit status: 0 done; 1 a socket, ring, TAP or BPF program the kernel refused,\n"
	       "or a superpacket it did not take; 2 bad usage (one line), also an interface\n"
	       "that is not a test's link or a destination that is not unicast.\n",
	       SECONDS_DEFAULT, FRAME_HLEN, ETH_FRAME_LEN, ETH_FRAME_LEN, ETH_FRAME_LEN);
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

/* An interface's name, as the kernel could have one, into *dst. */
static int ifname(const char *opt, const char *v, const char **dst)
{
	if (!*v || strlen(v) > DEV_NAME_MAX || strchr(v, '/'))
		return opt_bad(opt, v, "expected an interface name");
	*dst = v;
	return 0;
}

static int apply(void *ctx, int id, const char *name, const char *v)
{
	struct fb_options *o = ctx;
	uint64_t n;
	int way;

	switch (id) {
	case O_DEV:
		return ifname(name, v, &o->dev);
	case O_VIA:
		if (o->cmd == FB_SEND) {
			way = pick(send_names, 4, v, name, "expected mmsg, txring, xsk or tap");
			o->send.via = (enum send_via)way;
		} else {
			way = pick(recv_names, 4, v, name,
				   "expected ring, xdp, xdp-generic or vnet");
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
		o->send.frames = o->recv.frames = n;
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
	case O_ENCAP:
		way = pick(encap_names, 2, v, name, "expected gre or gre-udp");
		o->send.frame.encap = (enum frame_encap)way;
		return way < 0 ? way : 0;
	case O_SEGS:
		if (parse_u64(v, 1, UINT32_MAX, &n))
			return opt_bad(name, v, "expected a count from 1");
		o->send.segs = (unsigned)n;
		return 0;
	case O_REDIRECT:
		return ifname(name, v, &o->redirect);
	case O_ANY_INTERFACE:
		o->any_interface = true;
		return 0;
	case O_NO_DROP:
		o->recv.no_drop = true;
		return 0;
	}
	return -EINVAL;
}

/* Options of the other subcommand or way, named so that a slip gets a line, not a surprise. */
static int check_given(struct fb_options *o, const bool *given)
{
	static const int send_only[] = { O_DST_MAC, O_CSUM, O_SECONDS, O_LEN,
					 O_ENCAP,   O_SEGS, O_REDIRECT };
	static const int tap_only[] = { O_ENCAP, O_SEGS, O_REDIRECT };

	for (unsigned i = 0; i < sizeof(send_only) / sizeof(send_only[0]); i++)
		if (o->cmd == FB_RECV && given[send_only[i] - O_DEV]) {
			log_warnx("--%s is an option of send (see --help)",
				  opts[send_only[i] - O_DEV].name);
			return -EINVAL;
		}
	for (unsigned i = 0; i < sizeof(tap_only) / sizeof(tap_only[0]); i++)
		if (o->cmd == FB_SEND && o->send.via != SEND_TAP && given[tap_only[i] - O_DEV]) {
			log_warnx("--%s is an option of send --via tap (see --help)",
				  opts[tap_only[i] - O_DEV].name);
			return -EINVAL;
		}
	if (o->cmd == FB_SEND && given[O_VERIFY - O_DEV]) {
		log_warnx("--verify is an option of recv (see --help)");
		return -EINVAL;
	}
	if (given[O_NO_DROP - O_DEV] && (o->cmd != FB_RECV || o->recv.via != RECV_VNET)) {
		log_warnx("--no-drop is an option of recv --via vnet (see --help)");
		return -EINVAL;
	}
	if (o->cmd == FB_RECV && o->recv.via == RECV_VNET && o->recv.verify) {
		log_warnx("--verify is not for --via vnet: its slots hold a superpacket's headers, "
			  "not its payload");
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

/* A TAP's superpacket: segments with a payload, as many as an IPv4 packet holds. */
static int check_tap(struct fb_options *o, const bool *given)
{
	struct send_cfg *c = &o->send;
	unsigned max = frame_segs_max(c->frame.encap, c->frame.len);
	char v[24], expect[96];

	if (c->csum_full) {
		log_warnx("--via tap leaves the inner checksum partial: the kernel completes it "
			  "in every segment (--csum full is not for it)");
		return -EINVAL;
	}
	if (!max) {
		snprintf(v, sizeof(v), "%zu", c->frame.len);
		snprintf(expect, sizeof(expect),
			 "a segment of --encap %s needs more than its %zu bytes of headers",
			 fb_encap_name(c->frame.encap), frame_hlen(c->frame.encap));
		return opt_bad("len", v, expect);
	}
	if (!given[O_SEGS - O_DEV])
		c->segs = max;
	if (c->segs > max) {
		snprintf(v, sizeof(v), "%u", c->segs);
		snprintf(expect, sizeof(expect),
			 "expected 1 to %u (an IPv4 packet of at most 65535 bytes, --len %zu)", max,
			 c->frame.len);
		return opt_bad("segs", v, expect);
	}
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
	if (o->cmd == FB_SEND && o->send.via == SEND_TAP) {
		rc = check_tap(o, given);
		if (rc)
			return rc;
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

const char *fb_encap_name(enum frame_encap encap)
{
	return encap == FRAME_GRE_UDP ? encap_names[encap] : encap_names[FRAME_GRE];
}

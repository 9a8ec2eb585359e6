/*
 * tunbed-framebench's command line: a subcommand (send, recv) and its options.
 */
#ifndef TUNBED_FB_OPTIONS_H
#define TUNBED_FB_OPTIONS_H

#include "recv.h"
#include "send.h"

enum fb_cmd {
	FB_SEND,
	FB_RECV,
};

struct fb_options {
	enum fb_cmd cmd;
	const char *dev;
	const char *redirect; /* send --via tap: the interface its tcx program redirects to */
	bool any_interface;   /* any interface, not only a test's veth or TAP (testlink.h) */
	struct send_cfg send; /* ifindex, redirect and the frame's source MAC are the caller's */
	double seconds;	      /* send: 0 with --frames alone */
	struct recv_cfg recv; /* ifindex the caller's */
	int verbose;
};

/*
 * Reads argv into *o. Returns 0, 1 after printing the help or the version, or -EINVAL after
 * one line about what is wrong. Main thread.
 */
int fb_options_parse(struct fb_options *o, int argc, char **argv);

/* The names of the ways and encapsulations, as the command line and the JSON output spell
 * them. */
const char *fb_send_via_name(enum send_via via);
const char *fb_recv_via_name(enum recv_via via);
const char *fb_encap_name(enum frame_encap encap);

#endif

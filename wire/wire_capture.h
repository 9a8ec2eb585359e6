/*
 * Where the wire audit's frames come from: a live capture with libpcap on an interface of a
 * network namespace (with a kernel filter that lets only tunnel traffic through), or a
 * capture file; optionally written to a file as they are read.
 */
#ifndef TUNBED_WIRE_CAPTURE_H
#define TUNBED_WIRE_CAPTURE_H

#include <stdint.h>

#include "wire_limits.h"
#include "wire_audit.h"
#include "wire_report.h"

/*
 * The kernel filter, a pcap expression (%u: the GRE-in-UDP port): GRE and GRE-in-UDP; IPv4
 * later UDP fragments, which show no port; and every IPv6 packet whose fixed header is followed
 * by an extension header the decoder walks (hop-by-hop 0, routing 43, fragment 44, destination
 * options 60). A kernel filter cannot walk the header chain, so the decoder sorts those out.
 */
#define WIRE_FILTER_FMT                                                                        \
	"ip proto 47 or ip6 proto 47 or udp dst port %u or (ip proto 17 and ip[6:2] & 0x1fff " \
	"!= 0) or ip6[6] = 0 or ip6[6] = 43 or ip6[6] = 44 or ip6[6] = 60"

struct wire_capture_cfg {
	const char *netns;	/* live: namespace of iface; NULL for the current one */
	const char *iface;	/* live capture on this interface, or NULL */
	const char *read_path;	/* or read this capture file (pcap or pcapng) */
	const char *write_path; /* also write every frame read to this pcap file; or NULL */
	const char *ready_file; /* live: created when open, "ready" once running; or NULL */
	double time_s;		/* live: stop after this long; 0: when stop_fd is readable */
	uint64_t buffer_bytes;	/* live: the kernel ring */
	uint16_t udp_port;	/* GRE-in-UDP port, for the kernel filter */
	int stop_fd;		/* readable (a signalfd) when the capture must stop */
};

struct wire_capture;

/*
 * Opens the capture described by c; at log level info says what it opened and how. On
 * failure logs one line naming what failed and returns -errno: -ENOENT (no such namespace,
 * interface or file), -EPERM, -EINVAL (not a capture file), -EPROTONOSUPPORT (a link type
 * the decoder does not read), -EIO.
 */
int wire_capture_open(const struct wire_capture_cfg *c, struct wire_capture **out);

/* Live: the MTU of the interface as the capture opened; 0 for a file. */
unsigned wire_capture_mtu(const struct wire_capture *cap);

/* The link type of the frames (enum wire_link). */
int wire_capture_link(const struct wire_capture *cap);

/*
 * Writes "ready" into the ready file (live), then feeds every frame to a until the file ends,
 * the time is up or stop_fd fires (then drains what the kernel still holds). Opens nothing:
 * it may run after wire_priv_drop. Returns 0, or -EIO after logging (the ready file, a
 * truncated file, the interface gone): the frames read so far are in a.
 */
int wire_capture_run(struct wire_capture *cap, struct wire_audit *a);

/* Fills src with where the frames came from and, live, the kernel's capture counts. */
void wire_capture_source(struct wire_capture *cap, struct wire_source *src);

void wire_capture_close(struct wire_capture *cap);

#endif

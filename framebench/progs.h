/*
 * tunbed-framebench's tcx programs (tcx: Linux 6.6), written out as instructions
 * (common/ebpf.h) and attached by BPF links, so that they go when the process does:
 *  - at a TAP's ingress, what the kernel does with a superpacket written into it: redirect
 *    it to another interface's egress (bpf_redirect), or first put an outer IPv4 and GRE
 *    header before it (bpf_skb_adjust_room with the GRE encapsulation flags, a GSO skb of GRE
 *    the kernel can segment) and then redirect it or pass it on to the stack; one whose outer
 *    IPv4 packet would pass 65535 bytes is dropped;
 *  - at a receiver's ingress, the drop of the test's tunnel frames, so that its IP stack
 *    takes none of them up.
 */
#ifndef TUNBED_FB_PROGS_H
#define TUNBED_FB_PROGS_H

#include <stdbool.h>
#include <stdint.h>

/* What the TAP's program does with each frame. */
struct progs_tap {
	int redirect;	/* the ifindex to redirect to, at egress; 0: on to the stack */
	bool gre;	/* first the outer IPv4 (src to dst) and GRE header */
	uint8_t src[4]; /* network order */
	uint8_t dst[4];
};

/*
 * Attaches the program of p at tcx ingress of ifindex (the TAP). Returns the link's fd (its
 * close detaches it) or -errno (EINVAL: a kernel without tcx, or p asks for nothing: neither
 * a redirect nor GRE). Setup only.
 */
int progs_tap_attach(int ifindex, const struct progs_tap *p);

/*
 * Attaches at tcx ingress of ifindex the drop of IPv4 GRE and of IPv4 UDP to port 4754
 * (GRE-in-UDP), from anyone to anyone: the receiving end of a test's link. Returns the link's
 * fd or -errno. Setup only.
 */
int progs_drop_attach(int ifindex);

#endif

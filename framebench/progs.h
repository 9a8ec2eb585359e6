/*
 * tunbed-framebench's own tcx program (tcx: Linux 6.6), written out as instructions
 * (common/ebpf.h) and attached by a BPF link, so that it goes when the process does: at a
 * receiver's ingress, the drop of the test's tunnel frames, so that its IP stack takes none
 * of them up. The TAP sender's program is gregw's (common/tcx.h: tcx_tap_attach).
 */
#ifndef TUNBED_FB_PROGS_H
#define TUNBED_FB_PROGS_H

/*
 * Attaches at tcx ingress of ifindex the drop of IPv4 GRE and of IPv4 UDP to port 4754
 * (GRE-in-UDP), from anyone to anyone: the receiving end of a test's link. Returns the link's
 * fd or -errno. Setup only.
 */
int progs_drop_attach(int ifindex);

#endif

/*
 * Plain GRE from the peer, dropped at tc ingress of the outer interface (tcx, Linux 6.6): a
 * packet socket takes its copy before it (taps run before ingress), so the IP stack never
 * climbs each GRE packet up to a sink socket. gregw's receive rings, and tunbed-framebench's
 * ring receiver, which measures gregw's way. The program is attached by a BPF link: it goes
 * when its descriptor closes, also when the process is killed.
 */
#ifndef TUNBED_TCX_H
#define TUNBED_TCX_H

#include <stdint.h>

/*
 * Loads the drop of GRE (IP protocol 47, fragments too; over IPv6 also behind a destination
 * options header) from remote to local (4 or 16 bytes each of family, network order) and
 * attaches it at ingress of ifindex. Returns the link's fd, to keep open while the gateway
 * runs, or -errno (EINVAL or ENOTSUPP from a kernel without tcx). Setup only.
 */
int tcx_gre_drop_attach(int ifindex, int family, const uint8_t *local, const uint8_t *remote);

#endif

/*
 * Plain GRE from the peer, dropped at tc ingress of the outer interface (tcx, Linux 6.6):
 * gregw's packet sockets take their copy before it (taps run before ingress), so the IP
 * stack never climbs each GRE packet up to the sink socket. The program is attached by a BPF
 * link: it goes when gregw's descriptor closes, also when gregw is killed.
 */
#ifndef TUNBED_GW_TCX_H
#define TUNBED_GW_TCX_H

#include <stdint.h>

/*
 * Loads the drop of GRE (IP protocol 47, fragments too; over IPv6 also behind a destination
 * options header) from remote to local (4 or 16 bytes each of family, network order) and
 * attaches it at ingress of ifindex. Returns the link's fd, to keep open while the gateway
 * runs, or -errno (EINVAL or ENOTSUPP from a kernel without tcx). Setup only, main thread.
 */
int tcx_gre_drop_attach(int ifindex, int family, const uint8_t *local, const uint8_t *remote);

#endif

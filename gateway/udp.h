/*
 * The sockets of GRE-in-UDP (RFC 8086): per worker, one receiving socket bound to the local
 * address and port 4754 in a SO_REUSEPORT group (the group's program, steer.h, picks the
 * worker by the inner flow), with UDP_GRO, so that a burst of one flow's datagrams comes
 * up as one buffer; and a few sending sockets, each on its own source port and connected to
 * the peer's port 4754, so that the source port tells flows apart (RFC 8086, 3.1: the source
 * port is the flow's entropy) and a whole superpacket's segments leave in one send with
 * UDP_SEGMENT. Every worker sends from the same source ports, and a flow's port follows from
 * its addresses and ports alone (both directions alike), so a flow keeps one port whichever
 * worker sends it, and so one worker at the peer.
 */
#ifndef TUNBED_GW_UDP_H
#define TUNBED_GW_UDP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gw_limits.h"

#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif
#ifndef UDP_GRO
#define UDP_GRO 104
#endif
#ifndef IP_RECVFRAGSIZE
#define IP_RECVFRAGSIZE 25 /* Linux 4.10 */
#endif
#ifndef IPV6_RECVFRAGSIZE
#define IPV6_RECVFRAGSIZE 77
#endif

/*
 * Opens the receiving socket of family on local (4 or 16 bytes) and port, in the reuseport
 * group of the other workers' sockets, non-blocking, with UDP_GRO when gro, telling of every
 * datagram the kernel reassembled from fragments (IP_RECVFRAGSIZE). Returns an fd or -errno.
 */
int udp_rx_open(int family, const uint8_t *local, uint16_t port, bool gro);

/*
 * Opens a sending socket on local and source port *sport (0: an ephemeral one, stored back),
 * with SO_REUSEPORT so that every worker sends from the same ports, connected to remote and
 * port; a full send buffer blocks a send at most timeout_ms. Returns an fd or -errno.
 */
int udp_tx_open(int family, const uint8_t *local, uint16_t *sport, const uint8_t *remote,
		uint16_t port, unsigned timeout_ms);

/*
 * Buffers the kernel dropped on fd since it was opened (SO_MEMINFO's SK_MEMINFO_DROPS), or
 * 0: a buffer (an skb) is one datagram, or with UDP_GRO a whole burst of up to 64 (or a
 * UDP_SEGMENT message that veth carried whole), whose datagrams the kernel does not count. It
 * drops one when the receive buffer is full, and when the socket finds a datagram's UDP
 * checksum wrong (one over 76 bytes: shorter ones are checked on arrival, before any socket).
 */
uint64_t udp_drops(int fd);

/* The UDP counters of the network namespace (RFC 4113's udpInErrors family, as Linux keeps
 * them), for the datagrams gregw never sees: every UDP socket's and port's, not gregw's. */
struct udp_mib {
	uint64_t rcvbuf_errors; /* buffers dropped because a socket's receive buffer was full */
	uint64_t csum_errors;	/* datagrams with a wrong UDP checksum, wherever found */
};

/*
 * Parses /proc/net/snmp (AF_INET: the "Udp:" header and value lines, RcvbufErrors and
 * InCsumErrors) or /proc/net/snmp6 (AF_INET6: "Udp6RcvbufErrors N" and "Udp6InCsumErrors N"
 * lines) from text (len bytes). Pure. Returns 0, or -ENODATA when a counter is missing.
 */
int udp_mib_parse(int family, const char *text, size_t len, struct udp_mib *out);

/* Reads the namespace's counters of family (the calling thread's namespace). Returns 0 or
 * -errno. Any thread; it opens, reads and closes the file. */
int udp_mib_read(int family, struct udp_mib *out);

/* What this kernel offers a UDP socket of family: sending with UDP_SEGMENT (Linux 4.18) and
 * receiving with UDP_GRO (Linux 5.0). */
void udp_probe(int family, bool *gso, bool *gro);

#endif

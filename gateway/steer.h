/*
 * Which worker handles an inner flow: the kernel asks one eBPF program, built for the places
 * it runs, so that it makes every choice alike:
 *
 * - GRE-in-UDP: on the reuseport group of the receiving sockets, it picks the socket, that is
 *   the worker, of a datagram from the peer (the program sees the UDP payload: the GRE
 *   header, then the inner packet);
 * - plain GRE: on the fanout group of the receive rings, it picks the ring, that is the
 *   worker (it sees the outer packet);
 * - on the TUN device (TUNSETSTEERINGEBPF), it picks the queue, that is the worker, that
 *   reads a packet going into the tunnel.
 *
 * The program keys a flow by its inner addresses and ports (their XOR, mixed by a
 * multiplication: the same both ways) in a flow table both places share (an LRU hash map):
 * a known flow keeps its worker; a new one gets the next worker in turn, so that flows that
 * start together spread evenly (8 flows on 2 workers: 4 and 4, where a hash splits them 6
 * and 2 as often as not, and the 2 then get three times the others' share). A flow's two
 * directions meet one worker from its first packet on, and a flow never moves (which could
 * reorder it) unless the table forgets it, least recently seen first, beyond STEER_FLOWS
 * flows. Without the maps, by the hash alone (its middle bits modulo the workers). Without
 * the TUN program the device's own choice (its hash, then the queue that last wrote the flow)
 * takes over after a flow's first packets.
 */
#ifndef TUNBED_GW_STEER_H
#define TUNBED_GW_STEER_H

enum {
	STEER_FLOWS = 65536, /* flows the table remembers; beyond, the least recently seen go */
	STEER_INSNS = 96,    /* the program's length at most */
};

/* The flow table and the counter of turns, shared by the programs of one gregw; -1 absent. */
struct steer_maps {
	int flows, next;
};

/* Creates the maps. Returns 0, or -errno with both absent. Setup only. */
int steer_maps_create(struct steer_maps *m);
void steer_maps_close(struct steer_maps *m);

/*
 * Attaches the program to the reuseport group of fd, with n sockets (the workers, in the
 * order they joined), the inner packet gre_hlen bytes into the UDP payload; m NULL or absent:
 * by the hash alone. Returns 0 or -errno.
 */
int steer_reuseport_attach(int fd, unsigned gre_hlen, const struct steer_maps *m, unsigned n);

/*
 * Loads the program for the plain GRE receive rings' fanout group (PACKET_FANOUT_EBPF), with
 * n members, the inner packet outer_hlen bytes into the outer packet (the outer IP header and
 * GRE header gregw sends; a peer's longer ones, an IPv6 extension header or IPv4 options,
 * are read at the wrong place, and such flows follow the bytes found there). Returns its fd
 * or -errno.
 */
int steer_fanout_load(unsigned outer_hlen, const struct steer_maps *m, unsigned n);

/* Loads the program for TUN, with n queues, the same maps. Returns its fd or -errno. */
int steer_tun_load(const struct steer_maps *m, unsigned n);

/* Makes the TUN device of queue fd tun_fd pick queues with prog_fd. Returns 0 or -errno. */
int steer_tun_attach(int tun_fd, int prog_fd);

#endif

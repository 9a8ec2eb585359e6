/*
 * Which worker handles an inner flow, for GRE-in-UDP: one function of the inner packet's
 * addresses and ports (their XOR, mixed by a multiplication: the same for both directions of
 * a flow), computed by two BPF programs so that the kernel makes both choices alike:
 *
 * - a classic BPF program on the reuseport group of the receiving sockets picks the socket,
 *   that is the worker, of a datagram from the peer (the program sees the UDP payload: the
 *   GRE header, then the inner packet);
 * - an eBPF program on the TUN device (TUNSETSTEERINGEBPF) picks the queue, that is the
 *   worker, that reads a packet going into the tunnel.
 *
 * Both directions of a flow then meet one worker index at both gateways from the first packet
 * on, so a flow never moves between workers (which could reorder it). Without the TUN program
 * the device's own choice (its hash, then the queue that last wrote the flow) takes over
 * after a flow's first packets.
 */
#ifndef TUNBED_GW_STEER_H
#define TUNBED_GW_STEER_H

/*
 * Attaches the classic BPF program to the reuseport group of fd: datagrams go to socket
 * (hash % n), where the inner packet starts gre_hlen bytes into the UDP payload. Returns 0 or
 * -errno.
 */
int steer_reuseport_attach(int fd, unsigned gre_hlen, unsigned n);

/* Loads the eBPF program for TUN (the kernel takes its result modulo the queues). Returns
 * its fd or -errno. */
int steer_tun_load(void);

/* Makes the TUN device of queue fd tun_fd pick queues with prog_fd. Returns 0 or -errno. */
int steer_tun_attach(int tun_fd, int prog_fd);

#endif

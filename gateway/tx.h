/*
 * The transmit socket of a gregw worker: raw IPPROTO_RAW, so the worker writes the outer IP
 * header itself and the socket, being send-only, never receives a copy of anything.
 */
#ifndef TUNBED_GW_TX_H
#define TUNBED_GW_TX_H

/*
 * Opens a raw send-only socket of family (IPv6 with IPV6_HDRINCL) whose sends block for at
 * most timeout_ms when the socket buffer is full. Returns an fd or -errno.
 */
int tx_open(int family, unsigned timeout_ms);

#endif

/*
 * The client's ping probes (--icmp): ICMP or ICMPv6 echo requests to the server's address at
 * a fixed interval, from an unprivileged "ping" socket (net.ipv4.ping_group_range), on a
 * thread of their own; the server's kernel answers them, not tunbed-traffic. Alone they send
 * their count (idle latency); beside sessions they run from the end of the warm-up until the
 * load ends (latency under load). Messages and statistics: icmp.h.
 */
#ifndef TUNBED_TR_PING_H
#define TUNBED_TR_PING_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

struct client;

/*
 * Opens the probes' socket, connected to the server's address, and allocates what they
 * need: before the test, so that a host that refuses ping sockets is found out at once (one
 * line says why, naming the sysctl). Returns 0 or -errno. Main thread.
 */
int ping_open(struct client *cl);

/* Starts the probe thread. Returns 0 or -errno. Main thread, after ping_open. */
int ping_start(struct client *cl);

/* The load is over: the probes send no more and wait for the replies still out. */
void ping_load_over(struct client *cl);

/* True once the probe thread has ended (also when there are no probes). Any thread. */
bool ping_done(struct client *cl);

/* Joins the probe thread, and frees nothing: ping_json reads what it left. Main thread. */
void ping_join(struct client *cl);

/* The probes' CPU time, taken as their thread ended; 0 without probes. */
uint64_t ping_cpu_ns(const struct client *cl);

/* The errno that ended the probes early, 0 if none. */
int ping_error(const struct client *cl);

/* The final document's "icmp" object (docs/traffic.md). Main thread, after ping_join. */
json_t *ping_json(const struct client *cl);

/* The text report's line of an "icmp" object. */
void ping_text(const json_t *icmp);

/* Closes the socket and frees what ping_open allocated; nothing without probes. */
void ping_close(struct client *cl);

#endif

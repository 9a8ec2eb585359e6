/*
 * gregw telemetry as JSON (docs/gregw.md): the counters of every worker and their sum, drops
 * by reason, per-worker CPU time and last CPU, sequence accounting, and the flow tables.
 * Main thread only: reads the workers' counters with relaxed loads while they run.
 */
#ifndef TUNBED_GW_TELEMETRY_H
#define TUNBED_GW_TELEMETRY_H

#include <jansson.h>
#include <stdbool.h>

#include "gregw.h"

/*
 * The stats document; final marks the summary written on exit. Everything it says is read
 * first, once: the workers' counters, their CPU time, the drops the kernel reports of each
 * ring or socket since the last call (added to gregw's running sums), the namespace's UDP
 * counters and the TUN device's drops; then written. NULL if out of memory.
 */
json_t *telemetry_stats(struct gregw *g, bool final);

/* Every tracked inner flow of every worker. NULL if out of memory. */
json_t *telemetry_flows(struct gregw *g);

#endif

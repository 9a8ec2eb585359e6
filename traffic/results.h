/*
 * The server's memory of tests: per test (by test id) and session, what it received and sent
 * and what verification found, kept until a client asks over its control connection. Shared
 * by the server's threads under one mutex, touched only when a session starts or ends. UDP
 * sessions live in each thread's own table (see server.c), not here.
 */
#ifndef TUNBED_TR_RESULTS_H
#define TUNBED_TR_RESULTS_H

#include <stdint.h>

#include "traffic_limits.h" /* RESULTS_TESTS, RESULTS_KEEP_S */
#include "proto.h"

/* Adds a finished (or failed) connection of a session to its test's record. Any thread. */
void results_add(uint64_t test_id, const struct proto_result *r);

/*
 * Copies the records of test_id into out[0..max) (sessions in order, those never seen left
 * out) and returns how many. Any thread.
 */
unsigned results_get(uint64_t test_id, struct proto_result *out, unsigned max);

#endif

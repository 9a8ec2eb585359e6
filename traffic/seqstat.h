/*
 * What a UDP receiver learns from sequence numbers and send timestamps: loss, reordering,
 * duplicates (a sliding window of recently seen numbers) and interarrival jitter as RFC 3550
 * (section 6.4.1, appendix A.8) defines it. Pure.
 */
#ifndef TUNBED_TR_SEQSTAT_H
#define TUNBED_TR_SEQSTAT_H

#include <stdbool.h>
#include <stdint.h>

#include "traffic_limits.h" /* SEQ_WINDOW */

struct seqstat {
	uint64_t received;   /* datagrams accepted (duplicates not included) */
	uint64_t duplicates; /* a number seen before, within the window */
	uint64_t reordered;  /* arrived after a higher number (not a duplicate) */
	uint64_t too_old;    /* below the window: counted neither lost nor received */
	uint64_t highest;    /* highest number seen; valid when received > 0 */
	uint64_t lowest;     /* lowest number seen */
	double jitter_ns;    /* RFC 3550 J, in ns */
	bool have_transit;
	int64_t last_transit_ns;
	uint64_t window[SEQ_WINDOW / 64]; /* bit i: highest - i seen */
};

void seqstat_init(struct seqstat *s);

/*
 * Records datagram seq, sent at send_ns (sender's clock) and received at recv_ns (ours); the
 * clocks need not agree, only their rates (RFC 3550 jitter uses transit-time differences).
 */
void seqstat_add(struct seqstat *s, uint64_t seq, uint64_t send_ns, uint64_t recv_ns);

/* Records datagram seq without a send time (the short form): counted, not in the jitter. */
void seqstat_count(struct seqstat *s, uint64_t seq);

#endif

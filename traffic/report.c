/*
 * The client's reports: one emitter. Every interval and the final result are built as JSON
 * documents (docs/traffic.md has the schema); --json prints the final one with the intervals
 * inside, --json-stream prints each as a line, and the text is rendered from the same
 * documents, so that the two never disagree.
 */
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "client_int.h"
#include "clock.h"
#include "fairness.h"
#include "inet.h"
#include "jout.h"
#include "log.h"
#include "parse.h"
#include "ping.h"

static json_t *intervals; /* --json: kept for the final document */

static const char *pattern_name(enum proto_pattern p)
{
	return p == PROTO_PULL ? "pull" : p == PROTO_DUPLEX ? "duplex" : "push";
}

static void emit(struct client *cl, json_t *doc, void (*text)(const json_t *doc))
{
	switch (cl->cfg->output) {
	case OUT_JSON_STREAM:
		jout_dump(stdout, doc, 0);
		break;
	case OUT_JSON:
		break;
	case OUT_TEXT:
		text(doc);
		fflush(stdout);
		break;
	}
}

static void interval_text(const json_t *d)
{
	char r[32];

	printf("[%6.2f-%6.2f s] %12s  %3lld sessions  %6lld retransmits  rtt %.3f ms\n",
	       json_number_value(json_object_get(d, "start")),
	       json_number_value(json_object_get(d, "end")),
	       format_rate_text(json_number_value(json_object_get(d, "bits_per_second")), r,
				sizeof(r)),
	       json_integer_value(json_object_get(d, "sessions_active")),
	       json_integer_value(json_object_get(d, "retransmits")),
	       json_number_value(json_object_get(d, "rtt_ms_mean")));
}

void report_interval(struct client *cl, unsigned index, uint64_t from_ns, uint64_t to_ns,
		     const uint64_t *prev_bytes, uint64_t *bytes, const uint32_t *prev_retr,
		     uint32_t *retr)
{
	unsigned n = cl->cfg->sessions, active = 0, rtt_n = 0;
	double span = clock_secs(to_ns - from_ns), rtt_sum = 0;
	uint64_t total = 0, retr_total = 0;
	json_t *d = json_object(), *per = n <= CL_REPORT_SESSIONS_MAX ? json_array() : NULL;

	for (unsigned i = 0; i < n; i++) {
		struct session *s = &cl->sess[i];
		struct tcp_info ti;
		socklen_t len = sizeof(ti);
		int fd = __atomic_load_n(&s->fd, __ATOMIC_RELAXED);
		bool have_ti = false;

		bytes[i] = relaxed(&s->tx_total) + relaxed(&s->tx.bytes) + relaxed(&s->rx_total) +
			   relaxed(&s->rx.bytes);
		total += bytes[i] - prev_bytes[i];
		retr[i] = prev_retr[i];
		/* A churning session's fd may be another connection's a moment later: skip. */
		if (!cl->cfg->udp && !cl->cfg->churn && fd >= 0 &&
		    getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) == 0) {
			have_ti = true;
			retr[i] = ti.tcpi_total_retrans;
			rtt_sum += ti.tcpi_rtt / 1000.0;
			rtt_n++;
		}
		retr_total += retr[i] - prev_retr[i];
		active += fd >= 0;
		if (per) {
			json_t *o = json_object();

			jout_int(o, "id", i);
			jout_real(o, "bits_per_second",
				  (double)(bytes[i] - prev_bytes[i]) * 8 / span);
			if (have_ti) {
				jout_int(o, "retransmits", retr[i] - prev_retr[i]);
				jout_real(o, "rtt_ms", ti.tcpi_rtt / 1000.0);
				jout_real(o, "rttvar_ms", ti.tcpi_rttvar / 1000.0);
				jout_int(o, "cwnd", ti.tcpi_snd_cwnd);
				jout_u64(o, "delivery_rate_bps", ti.tcpi_delivery_rate * 8);
			}
			jout_append(per, o);
		}
	}
	jout_int(d, "interval", index);
	jout_real(d, "start", clock_secs(from_ns - cl->measure_ns));
	jout_real(d, "end", clock_secs(to_ns - cl->measure_ns));
	jout_u64(d, "bytes", total);
	jout_real(d, "bits_per_second", (double)total * 8 / span);
	jout_int(d, "sessions_active", active);
	jout_u64(d, "retransmits", retr_total);
	jout_real(d, "rtt_ms_mean", rtt_n ? rtt_sum / rtt_n : 0);
	if (per)
		jout_set(d, "sessions", per);
	if (cl->cfg->output == OUT_JSON) {
		if (!intervals)
			intervals = json_array();
		json_array_append(intervals, d);
	}
	emit(cl, d, interval_text);
	json_decref(d);
}

/* Errors by kind, with how many sessions had each: one line per kind for people. */
static json_t *errors_json(struct client *cl, unsigned *failed)
{
	json_t *arr = json_array();
	int seen[CL_ERRORS_KEPT];
	unsigned count[CL_ERRORS_KEPT], first[CL_ERRORS_KEPT], kinds = 0;

	*failed = 0;
	for (unsigned i = 0; i < cl->cfg->sessions; i++) {
		int e = cl->sess[i].error;
		unsigned k;

		if (!e)
			continue;
		(*failed)++;
		for (k = 0; k < kinds && seen[k] != e; k++)
			;
		if (k == kinds && kinds < CL_ERRORS_KEPT) {
			seen[kinds] = e;
			count[kinds] = 0;
			first[kinds++] = i;
		}
		if (k < kinds)
			count[k]++;
	}
	if (cl->rr_error) {
		seen[kinds] = cl->rr_error;
		count[kinds] = 1;
		first[kinds] = UINT32_MAX;
		kinds += kinds < CL_ERRORS_KEPT;
	}
	for (unsigned k = 0; k < kinds; k++) {
		json_t *o = json_object();

		jout_str(o, "error", strerror(seen[k]));
		jout_int(o, "sessions", count[k]);
		if (first[k] == UINT32_MAX)
			jout_str(o, "what", "latency probes");
		else
			jout_int(o, "first_session", first[k]);
		jout_append(arr, o);
	}
	return arr;
}

/*
 * Bytes the receiver counted in the measured part, for one session, and whether the server's
 * count was known. By time, each receiver counts what arrives inside the measured window
 * (the server learns the window from the hello); by bytes, everything counts.
 */
static uint64_t measured_bytes(struct client *cl, const struct session *s, bool *from_server)
{
	const struct client_cfg *c = cl->cfg;
	bool by_time = !c->bytes || c->churn;
	uint64_t up = 0, down = 0;

	*from_server = false;
	if (c->pattern != PROTO_PULL) {
		if (cl->have_result[s->id]) {
			up = by_time ? cl->results[s->id].rx_window : cl->results[s->id].rx_bytes;
			*from_server = true;
		} else {
			/* The server could not say: what the client sent is all there is. */
			up = s->tx_total - s->tx_mark;
		}
	}
	if (c->pattern != PROTO_PUSH)
		down = by_time ? s->rx_window_total : s->rx_total;
	return up + down;
}

static json_t *tcp_json(struct client *cl, double span, uint64_t *total_out)
{
	const struct client_cfg *c = cl->cfg;
	unsigned n = c->sessions, failed;
	json_t *o = json_object(), *arr = json_array(), *v = json_object();
	double *bps = calloc(n ? n : 1, sizeof(*bps)), mn = INFINITY, mx = 0;
	uint64_t total = 0, retr = 0, mism = 0, conns = 0, ecn = 0, ce = 0;
	int first_bad_session = -1;
	uint64_t first_bad = UINT64_MAX;
	const char *first_side = NULL;
	uint64_t stall_max = 0;
	int stall_session = -1;

	for (unsigned i = 0; i < n; i++) {
		struct session *s = &cl->sess[i];
		bool from_server;
		uint64_t b = measured_bytes(cl, s, &from_server);
		double d = c->bytes && !c->churn ? clock_secs(s->end_ns - s->start_ns) : span;
		json_t *e = json_object();
		uint64_t smism = s->mismatches;

		bps[i] = d > 0 ? (double)b * 8 / d : 0;
		total += b;
		conns += s->connections;
		retr += s->retrans;
		if (bps[i] < mn)
			mn = bps[i];
		if (bps[i] > mx)
			mx = bps[i];
		if (cl->have_result[i])
			smism += cl->results[i].mismatches;
		mism += smism;
		if (first_bad_session < 0 && cl->have_result[i] &&
		    cl->results[i].first_bad != UINT64_MAX) {
			first_bad_session = (int)i;
			first_bad = cl->results[i].first_bad;
			first_side = "server";
		}
		if (first_bad_session < 0 && s->first_bad != UINT64_MAX) {
			first_bad_session = (int)i;
			first_bad = s->first_bad;
			first_side = "client";
		}
		jout_int(e, "id", i);
		if (c->npairs) {
			const struct traffic_pair *p = &c->pairs[i % c->npairs];
			char a[NETADDR_STRLEN];

			jout_str(e, "local", netaddr_format(&p->local, a));
			jout_str(e, "remote", netaddr_format(&p->remote, a));
		}
		jout_u64(e, "sent", s->tx_total);
		jout_u64(e, "received", s->rx_total);
		if (cl->have_result[i]) {
			jout_u64(e, "server_received", cl->results[i].rx_bytes);
			jout_u64(e, "server_sent", cl->results[i].tx_bytes);
		}
		jout_real(e, "bits_per_second", bps[i]);
		jout_bool(e, "receiver_counted", c->pattern == PROTO_PULL || from_server);
		if (c->pattern != PROTO_PUSH) {
			/* A connection still open when the threads ended is in rx, not yet in the
			 * session's count. */
			uint64_t stall = s->rx_stall_max_ns > s->rx.stall_max_ns
						 ? s->rx_stall_max_ns
						 : s->rx.stall_max_ns;

			jout_real(e, "rx_stall_max_ms", (double)stall / 1e6);
			if (stall_session < 0 || stall > stall_max) {
				stall_max = stall;
				stall_session = (int)i;
			}
		}
		if (c->churn || c->iterations > 1)
			jout_u64(e, "connections", s->connections);
		if (s->ti_valid) {
			/* The last connection's: whether it negotiated ECN (RFC 3168, 6.1.1), and
			 * the segments it sent whose CE mark the receiver echoed. */
			ecn += (s->ti.tcpi_options & TCPI_OPT_ECN) != 0;
			ce += s->ti.tcpi_delivered_ce;
			jout_int(e, "retransmits", s->retrans);
			jout_real(e, "rtt_ms", s->ti.tcpi_rtt / 1000.0);
			jout_real(e, "rttvar_ms", s->ti.tcpi_rttvar / 1000.0);
			jout_int(e, "cwnd", s->ti.tcpi_snd_cwnd);
			jout_u64(e, "delivery_rate_bps", s->ti.tcpi_delivery_rate * 8);
		}
		if (c->verify)
			jout_u64(e, "mismatches", smism);
		jout_str(e, "error", s->error ? strerror(s->error) : NULL);
		jout_append(arr, e);
	}
	jout_int(o, "sessions", n);
	jout_u64(o, "bytes", total);
	jout_real(o, "bits_per_second", span > 0 ? (double)total * 8 / span : 0);
	jout_real(o, "session_bps_min", n ? mn : 0);
	jout_real(o, "session_bps_max", mx);
	jout_real(o, "jain", jain_index(bps, n));
	jout_u64(o, "retransmits", retr);
	jout_u64(o, "connections", conns);
	if (c->churn)
		jout_real(o, "connections_per_second", span > 0 ? (double)conns / span : 0);
	jout_u64(o, "ecn_negotiated", ecn);
	jout_u64(o, "ce_delivered", ce);
	jout_bool(v, "on", c->verify);
	jout_u64(v, "mismatches", mism);
	if (first_bad_session >= 0) {
		jout_int(v, "first_session", first_bad_session);
		jout_u64(v, "first_offset", first_bad);
		jout_str(v, "first_side", first_side);
	}
	jout_set(o, "verify", v);
	if (stall_session >= 0) {
		json_t *st = json_object();

		jout_real(st, "max_ms", (double)stall_max / 1e6);
		jout_int(st, "session", stall_session);
		jout_set(o, "rx_stall", st);
	}
	jout_set(o, "errors", errors_json(cl, &failed));
	jout_int(o, "failed", failed);
	jout_set(o, "per_session", arr);
	free(bps);
	*total_out = total;
	return o;
}

static json_t *udp_json(struct client *cl, double span, uint64_t *total_out)
{
	unsigned n = cl->cfg->sessions, failed;
	json_t *o = json_object(), *arr = json_array();
	uint64_t sent = 0, recv = 0, lost = 0, dup = 0, reord = 0, unsent = 0, bytes = 0;
	double jit = 0;

	for (unsigned i = 0; i < n; i++) {
		struct session *s = &cl->sess[i];
		struct proto_udp_result *r = &cl->udp_results[i];
		uint64_t got = cl->have_udp_result[i] ? r->received : 0;
		uint64_t l = s->udp_seq > got ? s->udp_seq - got : 0;
		json_t *e = json_object();

		sent += s->udp_seq;
		recv += got;
		lost += l;
		unsent += s->udp_unsent;
		dup += cl->have_udp_result[i] ? r->duplicates : 0;
		reord += cl->have_udp_result[i] ? r->reordered : 0;
		if (cl->have_udp_result[i] && r->jitter_ns / 1e6 > jit)
			jit = (double)r->jitter_ns / 1e6;
		jout_int(e, "id", i);
		jout_u64(e, "sent", s->udp_seq);
		jout_u64(e, "received", got);
		jout_u64(e, "lost", l);
		jout_u64(e, "not_sent", s->udp_unsent);
		if (cl->have_udp_result[i]) {
			jout_u64(e, "duplicates", r->duplicates);
			jout_u64(e, "reordered", r->reordered);
			jout_real(e, "jitter_ms", (double)r->jitter_ns / 1e6);
		}
		jout_str(e, "error", s->error ? strerror(s->error) : NULL);
		jout_append(arr, e);
	}
	bytes = recv * cl->cfg->udp_size;
	jout_int(o, "sessions", n);
	jout_int(o, "size", cl->cfg->udp_size);
	jout_u64(o, "sent", sent);
	jout_u64(o, "received", recv);
	jout_u64(o, "lost", lost);
	jout_real(o, "loss_percent", sent ? 100.0 * (double)lost / (double)sent : 0);
	jout_u64(o, "not_sent", unsent);
	jout_u64(o, "duplicates", dup);
	jout_u64(o, "reordered", reord);
	jout_real(o, "jitter_ms_max", jit);
	jout_real(o, "bits_per_second", span > 0 ? (double)bytes * 8 / span : 0);
	udp_report(cl, o, unsent);
	jout_set(o, "errors", errors_json(cl, &failed));
	jout_int(o, "failed", failed);
	jout_set(o, "per_session", arr);
	*total_out = bytes;
	return o;
}

static json_t *rr_json(struct client *cl)
{
	static const struct {
		const char *key;
		double q;
	} pct[] = { { "p50_ms", 50 }, { "p90_ms", 90 }, { "p99_ms", 99 }, { "p99_9_ms", 99.9 } };
	const struct hist *h = &cl->rr_hist;
	json_t *o = json_object();

	jout_u64(o, "probes", h->count);
	jout_int(o, "size", cl->cfg->rr_size);
	jout_int(o, "rate", cl->cfg->rr_rate);
	if (h->count) {
		jout_real(o, "min_ms", h->min_ns / 1e6);
		for (size_t i = 0; i < sizeof(pct) / sizeof(pct[0]); i++)
			jout_real(o, pct[i].key, hist_percentile(h, pct[i].q) / 1e6);
		jout_real(o, "max_ms", h->max_ns / 1e6);
		jout_real(o, "mean_ms", (double)h->sum_ns / (double)h->count / 1e6);
	}
	jout_str(o, "error", cl->rr_error ? strerror(cl->rr_error) : NULL);
	return o;
}

/* The packet schedule's line, and the sampled latency's. */
static void udp_text(const json_t *u)
{
	const json_t *lat = json_object_get(u, "latency");

	printf("  offered  %.0f of %.0f datagrams/s (%.2f%%%s)  late %lld\n",
	       json_number_value(json_object_get(u, "offered_pps")),
	       json_number_value(json_object_get(u, "pps")),
	       100 * json_number_value(json_object_get(u, "offered_ratio")),
	       json_is_true(json_object_get(u, "offered_ok")) ? "" : ", NOT the rate asked",
	       json_integer_value(json_object_get(u, "late")));
	if (lat && json_object_get(lat, "p50_ms"))
		printf("  latency  %lld samples: min %.3f p50 %.3f p90 %.3f p99 %.3f max %.3f ms "
		       "(round trip)\n",
		       json_integer_value(json_object_get(lat, "samples")),
		       json_number_value(json_object_get(lat, "min_ms")),
		       json_number_value(json_object_get(lat, "p50_ms")),
		       json_number_value(json_object_get(lat, "p90_ms")),
		       json_number_value(json_object_get(lat, "p99_ms")),
		       json_number_value(json_object_get(lat, "max_ms")));
}

static void final_text(const json_t *d)
{
	const json_t *cfg = json_object_get(d, "config"), *t = json_object_get(d, "tcp"),
		     *u = json_object_get(d, "udp"), *rr = json_object_get(d, "rr"),
		     *cpu = json_object_get(d, "cpu"), *errs, *e;
	char r[32], r2[32];
	size_t i;

	printf("%s to %s port %lld: %.2f s measured%s\n",
	       json_string_value(json_object_get(d, "summary")),
	       json_string_value(json_object_get(cfg, "server")),
	       json_integer_value(json_object_get(cfg, "port")),
	       json_number_value(json_object_get(d, "measured_s")),
	       json_is_true(json_object_get(d, "interrupted")) ? " (interrupted)" : "");
	if (t) {
		printf("  sum      %s  %llu bytes  %lld retransmits\n",
		       format_rate_text(json_number_value(json_object_get(t, "bits_per_second")), r,
					sizeof(r)),
		       (unsigned long long)json_integer_value(json_object_get(t, "bytes")),
		       json_integer_value(json_object_get(t, "retransmits")));
		printf("  sessions min %s  max %s  Jain %.4f\n",
		       format_rate_text(json_number_value(json_object_get(t, "session_bps_min")), r,
					sizeof(r)),
		       format_rate_text(json_number_value(json_object_get(t, "session_bps_max")),
					r2, sizeof(r2)),
		       json_number_value(json_object_get(t, "jain")));
		if (json_integer_value(json_object_get(t, "ecn_negotiated")) ||
		    strcmp(json_string_value(json_object_get(cfg, "ecn")), "on") == 0)
			printf("  ecn      %lld of %lld sessions negotiated ECN, %lld CE marks "
			       "echoed\n",
			       json_integer_value(json_object_get(t, "ecn_negotiated")),
			       json_integer_value(json_object_get(t, "sessions")),
			       json_integer_value(json_object_get(t, "ce_delivered")));
		if (json_object_get(t, "connections_per_second"))
			printf("  churn    %lld connections, %.1f per second\n",
			       json_integer_value(json_object_get(t, "connections")),
			       json_number_value(json_object_get(t, "connections_per_second")));
		if (json_is_true(json_object_get(json_object_get(t, "verify"), "on"))) {
			const json_t *v = json_object_get(t, "verify");

			if (json_integer_value(json_object_get(v, "mismatches")))
				printf("  verify   %lld bytes wrong, first in session %lld at "
				       "offset %lld (%s side)\n",
				       json_integer_value(json_object_get(v, "mismatches")),
				       json_integer_value(json_object_get(v, "first_session")),
				       json_integer_value(json_object_get(v, "first_offset")),
				       json_string_value(json_object_get(v, "first_side")));
			else
				printf("  verify   every byte checked, none wrong\n");
		}
		errs = json_object_get(t, "errors");
	} else {
		errs = u ? json_object_get(u, "errors") : NULL;
	}
	if (u)
		printf("  udp      %s received  sent %lld  lost %lld (%.3f%%)  not sent %lld  dup "
		       "%lld  reordered %lld  jitter max %.3f ms\n",
		       format_rate_text(json_number_value(json_object_get(u, "bits_per_second")), r,
					sizeof(r)),
		       json_integer_value(json_object_get(u, "sent")),
		       json_integer_value(json_object_get(u, "lost")),
		       json_number_value(json_object_get(u, "loss_percent")),
		       json_integer_value(json_object_get(u, "not_sent")),
		       json_integer_value(json_object_get(u, "duplicates")),
		       json_integer_value(json_object_get(u, "reordered")),
		       json_number_value(json_object_get(u, "jitter_ms_max")));
	if (u)
		udp_text(u);
	if (rr && json_integer_value(json_object_get(rr, "probes"))) {
		static const struct {
			const char *label, *key;
		} lat[] = { { "min", "min_ms" }, { "p50", "p50_ms" },	  { "p90", "p90_ms" },
			    { "p99", "p99_ms" }, { "p99.9", "p99_9_ms" }, { "max", "max_ms" } };

		printf("  latency  %lld probes:",
		       json_integer_value(json_object_get(rr, "probes")));
		for (i = 0; i < sizeof(lat) / sizeof(lat[0]); i++)
			printf(" %s %.3f", lat[i].label,
			       json_number_value(json_object_get(rr, lat[i].key)));
		printf(" ms\n");
	}
	if (json_object_get(d, "icmp"))
		ping_text(json_object_get(d, "icmp"));
	printf("  cpu      client %.2f s", json_number_value(json_object_get(cpu, "client_s")));
	if (json_object_get(cpu, "client_s_per_gb"))
		printf(" (%.2f s/GB)", json_number_value(json_object_get(cpu, "client_s_per_gb")));
	if (json_object_get(cpu, "server_s"))
		printf(", server %.2f s", json_number_value(json_object_get(cpu, "server_s")));
	if (json_object_get(cpu, "server_s_per_gb"))
		printf(" (%.2f s/GB)", json_number_value(json_object_get(cpu, "server_s_per_gb")));
	printf("\n");
	json_array_foreach(errs, i, e) printf(
		"  error    %s: %lld session%s\n", json_string_value(json_object_get(e, "error")),
		json_integer_value(json_object_get(e, "sessions")),
		json_integer_value(json_object_get(e, "sessions")) == 1 ? "" : "s");
}

/* The one line a failure gets on stderr. */
static void error_line(struct client *cl, const json_t *errs)
{
	const json_t *e = json_array_get(errs, 0);

	if (!e)
		return;
	if (json_object_get(e, "what"))
		log_warnx("%s port %u: %s (%s)", cl->cfg->host, cl->cfg->port,
			  json_string_value(json_object_get(e, "error")),
			  json_string_value(json_object_get(e, "what")));
	else
		log_warnx("%s port %u: %s (%lld of %u sessions)%s", cl->cfg->host, cl->cfg->port,
			  json_string_value(json_object_get(e, "error")),
			  json_integer_value(json_object_get(e, "sessions")), cl->cfg->sessions,
			  json_array_size(errs) > 1 ? ", and other errors" : "");
}

/* --ecn as given: on, off, or a codepoint's name. */
static const char *ecn_name(const struct client_cfg *c)
{
	if (c->ecn == CLIENT_ECN_CODEPOINT)
		return ip_ecn_name(c->ecn_codepoint);
	return c->ecn == CLIENT_ECN_ON ? "on" : "off";
}

int report_final(struct client *cl)
{
	const struct client_cfg *c = cl->cfg;
	json_t *d = json_object(), *cfg = json_object(), *cpu = json_object(), *errs = NULL;
	uint64_t total = 0, end = cl->end_ns;
	double span;
	char summary[128], test[24];
	bool ok = true, interrupted = cl->interrupted;
	unsigned ecn_short = 0; /* --ecn on: TCP sessions without ECN */

	if (cl->deadline_ns != UINT64_MAX && end > cl->deadline_ns)
		end = cl->deadline_ns;
	span = end > cl->measure_ns ? clock_secs(end - cl->measure_ns) : 0;
	snprintf(test, sizeof(test), "%016llx", (unsigned long long)cl->test_id);
	jout_str(d, "tunbed_traffic", TUNBED_VERSION);
	jout_str(d, "test_id", test);
	jout_str(cfg, "server", c->host);
	jout_bool(cfg, "any_address", c->any_address);
	jout_int(cfg, "port", c->port);
	jout_str(cfg, "protocol", c->udp ? "udp" : "tcp");
	if (!c->udp)
		jout_str(cfg, "congestion", cl->congestion);
	jout_int(cfg, "sessions", c->sessions);
	if (c->npairs)
		jout_int(cfg, "pairs", c->npairs);
	jout_int(cfg, "threads", cl->nthreads);
	jout_int(cfg, "dscp", c->dscp);
	jout_str(cfg, "ecn", ecn_name(c));
	jout_str(cfg, "pattern", pattern_name(c->pattern));
	jout_real(cfg, "time_s", c->time_ms / 1000.0);
	jout_u64(cfg, "bytes", c->bytes);
	jout_real(cfg, "warmup_s", c->warmup_ms / 1000.0);
	jout_int(cfg, "iterations", c->iterations);
	jout_u64(cfg, "rate_bps", c->rate_bps);
	jout_int(cfg, "buffer", c->buffer);
	jout_bool(cfg, "verify", c->verify);
	jout_str(cfg, "shutdown", c->rst ? "rst" : "graceful");
	jout_bool(cfg, "churn", c->churn);
	jout_bool(cfg, "rr", c->rr);
	jout_bool(cfg, "icmp", c->icmp);
	jout_set(d, "config", cfg);
	jout_real(d, "measured_s", span);
	/* CLOCK_MONOTONIC is one clock for every namespace of the machine: a runner sampling
	 * CPU on it can line its samples up with the measured window. */
	jout_real(d, "measure_start_mono_s", clock_secs(cl->measure_ns));
	jout_real(d, "measure_end_mono_s", clock_secs(end));
	jout_bool(d, "interrupted", interrupted);
	if (c->sessions) {
		json_t *part = c->udp ? udp_json(cl, span, &total) : tcp_json(cl, span, &total);

		errs = json_object_get(part, "errors");
		ok = json_integer_value(json_object_get(part, "failed")) == 0;
		if (!c->udp && c->ecn == CLIENT_ECN_ON)
			ecn_short = c->sessions - (unsigned)json_integer_value(
							  json_object_get(part, "ecn_negotiated"));
		ok = ok && !ecn_short;
		if (!c->udp && json_integer_value(json_object_get(json_object_get(part, "verify"),
								  "mismatches")))
			ok = false;
		jout_set(d, c->udp ? "udp" : "tcp", part);
	}
	if (c->rr) {
		jout_set(d, "rr", rr_json(cl));
		ok = ok && !cl->rr_error;
		if (!errs && cl->rr_error) {
			unsigned failed;

			errs = errors_json(cl, &failed);
			json_object_set_new(d, "errors", errs);
		}
	}
	if (c->icmp) {
		jout_set(d, "icmp", ping_json(cl));
		ok = ok && !ping_error(cl);
	}
	jout_real(cpu, "client_s", clock_secs(cl->client_cpu_ns));
	if (total)
		jout_real(cpu, "client_s_per_gb",
			  clock_secs(cl->client_cpu_ns) / ((double)total / 1e9));
	if (cl->have_server_cpu) {
		uint64_t s = cl->server_cpu_end - cl->server_cpu_start;

		jout_real(cpu, "server_s", clock_secs(s));
		if (total)
			jout_real(cpu, "server_s_per_gb", clock_secs(s) / ((double)total / 1e9));
	}
	jout_set(d, "cpu", cpu);
	if (intervals)
		jout_set(d, "intervals", intervals);
	intervals = NULL;
	if (c->udp)
		snprintf(summary, sizeof(summary), "%u UDP session%s push", c->sessions,
			 c->sessions == 1 ? "" : "s");
	else
		snprintf(summary, sizeof(summary), "%u TCP session%s %s (%s)", c->sessions,
			 c->sessions == 1 ? "" : "s", pattern_name(c->pattern), cl->congestion);
	if (!c->sessions)
		snprintf(summary, sizeof(summary), "latency probes");
	jout_str(d, "summary", summary);
	jout_bool(d, "complete", ok && !interrupted);
	if (c->output == OUT_TEXT)
		final_text(d);
	else
		jout_dump(stdout, d, c->output == OUT_JSON ? JOUT_PRETTY : 0);
	if (!ok && json_array_size(errs))
		error_line(cl, errs);
	else if (ecn_short)
		log_warnx("--ecn on: %u of %u sessions negotiated no ECN (net.ipv4.tcp_ecn = 1 in "
			  "the client's namespace asks for it)",
			  ecn_short, c->sessions);
	else if (!ok && ping_error(cl))
		log_warnx("%s: ping probes: %s", c->host, strerror(ping_error(cl)));
	json_decref(d);
	return ok && !interrupted ? 0 : 1;
}

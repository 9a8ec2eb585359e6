/*
 * The client's control connection: asks the server for its CPU time and for its side of the
 * test's sessions (see proto.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "client_int.h"
#include "clock.h"

/* One request on a fresh control connection; the records land in *out (freed by caller). */
static int request(struct client *cl, uint8_t type, struct proto_ctl_ans *ans, uint8_t **out,
		   uint64_t until)
{
	struct proto_hello h = { .kind = PROTO_KIND_CONTROL, .test_id = cl->test_id };
	struct proto_ctl_req req = { .type = type, .test_id = cl->test_id };
	uint8_t hello[PROTO_HELLO_LEN], r[PROTO_CTL_REQ_LEN], hdr[PROTO_CTL_ANS_HLEN];
	size_t len;
	int fd, rc;

	*out = NULL;
	fd = conn_connect_blocking(&cl->peer, cl->peer_len, SOCK_STREAM, until);
	if (fd < 0)
		return fd;
	proto_hello_build(hello, sizeof(hello), &h);
	proto_ctl_req_build(r, sizeof(r), &req);
	rc = io_full(fd, hello, sizeof(hello), true, until);
	if (!rc)
		rc = io_full(fd, r, sizeof(r), true, until);
	if (!rc)
		rc = io_full(fd, hdr, sizeof(hdr), false, until);
	if (!rc && (proto_ctl_ans_parse(hdr, sizeof(hdr), ans) < 0 || ans->type != type))
		rc = -EPROTO;
	if (!rc) {
		len = (size_t)ans->count * proto_ctl_record_len(type);
		*out = malloc(len ? len : 1);
		rc = *out ? io_full(fd, *out, len, false, until) : -ENOMEM;
	}
	close(fd);
	if (rc) {
		free(*out);
		*out = NULL;
	}
	return rc;
}

/* Sleeps ns, but not past until (0: no bound). */
static void sleep_until(uint64_t ns, uint64_t until)
{
	uint64_t now = clock_mono_ns();

	if (until && now + ns > until)
		ns = until > now ? until - now : 0;
	clock_sleep_ns(ns);
}

int ctlc_cpu(struct client *cl, uint64_t *cpu_ns, uint64_t until)
{
	struct proto_ctl_ans ans;
	struct proto_cpu cpu;
	uint8_t *rec;
	int rc = request(cl, PROTO_CTL_CPU, &ans, &rec, until);

	if (rc)
		return rc;
	if (ans.count != 1 || proto_cpu_parse(rec, PROTO_CPU_LEN, &cpu) < 0)
		rc = -EPROTO;
	else
		*cpu_ns = cpu.cpu_ns;
	free(rec);
	return rc;
}

int ctlc_results(struct client *cl, uint64_t until)
{
	uint64_t wait_until = clock_mono_ns() + CL_CTL_RESULTS_WAIT_S * (uint64_t)NSEC_PER_SEC;
	unsigned want = 0;

	if (until && until < wait_until)
		wait_until = until;

	/* The server records a session when it sees it end, a moment after the client does. */
	for (unsigned i = 0; i < cl->cfg->sessions; i++)
		want += cl->sess[i].connections > 0;
	for (;;) {
		struct proto_ctl_ans ans;
		unsigned have = 0;
		uint8_t *rec;
		int rc = request(cl, PROTO_CTL_RESULTS, &ans, &rec, until);

		if (rc)
			return rc;
		for (uint32_t i = 0; i < ans.count; i++) {
			struct proto_result r;

			if (proto_result_parse(rec + (size_t)i * PROTO_RESULT_LEN, PROTO_RESULT_LEN,
					       &r) < 0 ||
			    r.session >= cl->cfg->sessions)
				continue;
			cl->results[r.session] = r;
			cl->have_result[r.session] = true;
		}
		free(rec);
		for (unsigned i = 0; i < cl->cfg->sessions; i++)
			have += cl->have_result[i] && cl->sess[i].connections > 0;
		if (have >= want || clock_mono_ns() > wait_until)
			return 0;
		sleep_until(CL_CTL_RESULTS_POLL_MS * (uint64_t)NSEC_PER_MSEC, until);
	}
}

int ctlc_udp_results(struct client *cl, uint64_t until)
{
	struct proto_ctl_ans ans;
	uint8_t *rec;
	int rc;

	/* Datagrams still in flight when the senders stop: give them a moment to land. */
	sleep_until(CL_CTL_UDP_SETTLE_MS * (uint64_t)NSEC_PER_MSEC, until);
	rc = request(cl, PROTO_CTL_UDP_RESULTS, &ans, &rec, until);
	if (rc)
		return rc;
	for (uint32_t i = 0; i < ans.count; i++) {
		struct proto_udp_result r;

		if (proto_udp_result_parse(rec + (size_t)i * PROTO_UDP_RESULT_LEN,
					   PROTO_UDP_RESULT_LEN, &r) < 0 ||
		    r.session >= cl->cfg->sessions)
			continue;
		cl->udp_results[r.session] = r;
		cl->have_udp_result[r.session] = true;
	}
	free(rec);
	return 0;
}

/*
 * The client's ping probes: ICMP (RFC 792) or ICMPv6 (RFC 4443) echo requests from a ping
 * socket (SOCK_DGRAM, IPPROTO_ICMP or IPPROTO_ICMPV6) at --icmp-interval, their replies
 * matched by number, round trips from the send time to the kernel's receive time (see
 * ping.h).
 */
#include "ping.h"

#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "client_int.h"
#include "clock.h"
#include "icmp.h"
#include "inet.h"
#include "jout.h"
#include "log.h"

struct ping {
	int fd;
	uint32_t count, size; /* probes to send; payload bytes */
	uint64_t interval_ns;
	uint8_t *tx, *rx; /* a message to send; room for one received */
	size_t rx_room;
	uint64_t *sent_ns; /* by number: CLOCK_REALTIME as it went */
	uint8_t *replied;  /* by number: a reply was counted */
	uint32_t sent, received;
	uint64_t duplicates; /* replies to a probe already answered */
	uint64_t strays;     /* echo replies that are not ours: another test, a number never sent */
	uint64_t unreachable; /* ICMP errors the socket reported: the probe they answer is lost */
	uint64_t send_failed; /* probes the kernel did not take: lost too */
	struct icmp_stats stats;
	int error;
	int load_over;
	int done;
	pthread_t thread;
	bool started;
	uint64_t cpu_ns;
};

/* Says why this host will not open a ping socket: most often the sysctl's range. */
static void refused(int err)
{
	char range[64] = "";
	FILE *f;

	if (err != EACCES) {
		log_warnx("--icmp: cannot open an ICMP echo socket: %s", strerror(err));
		return;
	}
	f = fopen("/proc/sys/net/ipv4/ping_group_range", "re");
	if (f) {
		if (fgets(range, sizeof(range), f))
			range[strcspn(range, "\n")] = '\0';
		fclose(f);
	}
	for (char *c = range; *c; c++) {
		if (*c == '\t')
			*c = ' ';
	}
	log_warnx("--icmp: group %u may not open ICMP echo sockets here (net.ipv4.ping_group_range "
		  "is '%s'; allow it: sysctl -w net.ipv4.ping_group_range='0 2147483647')",
		  (unsigned)getgid(), range);
}

int ping_open(struct client *cl)
{
	const struct client_cfg *c = cl->cfg;
	struct ping *pg = calloc(1, sizeof(*pg));
	struct sockaddr_storage ss;
	socklen_t len;
	int one = 1, err;

	if (!pg)
		return -ENOMEM;
	cl->ping = pg;
	pg->fd = socket(c->addr.family, SOCK_DGRAM | SOCK_CLOEXEC,
			c->addr.family == AF_INET6 ? IPPROTO_ICMPV6 : IPPROTO_ICMP);
	if (pg->fd < 0) {
		err = errno;
		refused(err);
		return -err;
	}
	len = netaddr_sockaddr(c->addr.family, c->addr.bytes, 0, &ss);
	if (connect(pg->fd, (struct sockaddr *)&ss, len) < 0) {
		err = errno;
		log_warnx("--icmp: cannot connect the ICMP echo socket to %s: %s", c->host,
			  strerror(err));
		return -err;
	}
	/* The kernel's receive time: a probe thread that wakes late under load must not add
	 * its own delay to the round trip. */
	setsockopt(pg->fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof(one));
	pg->count = c->icmp_count;
	pg->size = c->icmp_size;
	pg->interval_ns = c->icmp_interval_ms * NSEC_PER_MSEC;
	pg->rx_room = ICMP_HLEN + (size_t)pg->size;
	pg->tx = malloc(ICMP_HLEN + (size_t)pg->size);
	pg->rx = malloc(pg->rx_room);
	pg->sent_ns = calloc(pg->count, sizeof(*pg->sent_ns));
	pg->replied = calloc(pg->count, sizeof(*pg->replied));
	if (!pg->tx || !pg->rx || !pg->sent_ns || !pg->replied)
		return -ENOMEM;
	icmp_stats_init(&pg->stats);
	return 0;
}

static void send_probe(struct client *cl, struct ping *pg)
{
	struct icmp_probe pr = { .number = pg->sent, .test_id = cl->test_id };
	int len = icmp_echo_build(pg->tx, ICMP_HLEN + (size_t)pg->size, cl->cfg->addr.family, &pr,
				  pg->size);

	pg->sent_ns[pg->sent] = clock_real_ns();
	pg->sent++;
	if (len < 0 || send(pg->fd, pg->tx, (size_t)len, MSG_DONTWAIT) < 0)
		pg->send_failed++;
}

/* The kernel's receive time of the message, or now when it gave none. */
static uint64_t received_at(struct msghdr *m)
{
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(m); cm; cm = CMSG_NXTHDR(m, cm)) {
		if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_TIMESTAMPNS &&
		    cm->cmsg_len >= CMSG_LEN(sizeof(struct timespec))) {
			struct timespec ts;

			memcpy(&ts, CMSG_DATA(cm), sizeof(ts));
			return clock_ns_from_ts(&ts);
		}
	}
	return clock_real_ns();
}

static void take_reply(struct client *cl, struct ping *pg, size_t len, uint64_t at)
{
	struct icmp_probe pr;

	if (icmp_echo_parse(pg->rx, len, cl->cfg->addr.family, &pr) < 0 ||
	    pr.test_id != cl->test_id || pr.number >= pg->sent) {
		pg->strays++;
		return;
	}
	if (pg->replied[pr.number]) {
		pg->duplicates++;
		return;
	}
	pg->replied[pr.number] = 1;
	pg->received++;
	/* A clock stepped back between send and receive would give a negative round trip. */
	icmp_stats_add(&pg->stats, at > pg->sent_ns[pr.number] ? at - pg->sent_ns[pr.number] : 0);
}

/* Takes every reply waiting. Returns 0, or -errno for a socket that failed for good. */
static int drain(struct client *cl, struct ping *pg)
{
	for (;;) {
		union {
			char buf[CMSG_SPACE(sizeof(struct timespec)) * 2];
			struct cmsghdr align;
		} ctl;
		struct iovec iov = { .iov_base = pg->rx, .iov_len = pg->rx_room };
		struct msghdr m = { .msg_iov = &iov,
				    .msg_iovlen = 1,
				    .msg_control = ctl.buf,
				    .msg_controllen = sizeof(ctl.buf) };
		ssize_t n = recvmsg(pg->fd, &m, MSG_DONTWAIT);

		if (n >= 0) {
			take_reply(cl, pg, (size_t)n, received_at(&m));
			continue;
		}
		if (errno == EAGAIN || errno == EINTR)
			return 0;
		/* An ICMP error answering a probe (unreachable, time exceeded) comes back as the
		 * connected socket's error: that probe is lost, the next may pass. */
		if (errno == EHOSTUNREACH || errno == ENETUNREACH || errno == ECONNREFUSED ||
		    errno == EPROTO || errno == EMSGSIZE) {
			pg->unreachable++;
			continue;
		}
		return -errno;
	}
}

static bool stopped(const struct client *cl)
{
	return __atomic_load_n(&cl->stop, __ATOMIC_RELAXED);
}

static void *ping_main(void *arg)
{
	struct client *cl = arg;
	struct ping *pg = cl->ping;
	/* Beside a load the probes also end at its deadline; alone, their count ends them. */
	uint64_t deadline = cl->cfg->sessions ? cl->deadline_ns : UINT64_MAX;
	uint64_t next = cl->measure_ns, linger = 0;

	while (!stopped(cl)) {
		uint64_t now = clock_mono_ns(), wake;
		struct pollfd pfd = { .fd = pg->fd, .events = POLLIN };
		int rc;

		if (!linger && (pg->sent == pg->count || now >= deadline ||
				__atomic_load_n(&pg->load_over, __ATOMIC_ACQUIRE)))
			linger = now + (uint64_t)CL_ICMP_WAIT_MS * NSEC_PER_MSEC;
		if (linger && (pg->received + pg->send_failed >= pg->sent || now >= linger))
			break;
		if (!linger && now >= next) {
			send_probe(cl, pg);
			/* A thread that woke late keeps the interval from now: no burst. */
			next = next + pg->interval_ns > now ? next + pg->interval_ns
							    : now + pg->interval_ns;
			continue;
		}
		wake = linger ? linger : next;
		if (wake > now + (uint64_t)CL_POLL_MAX_MS * NSEC_PER_MSEC)
			wake = now + (uint64_t)CL_POLL_MAX_MS * NSEC_PER_MSEC;
		rc = poll(&pfd, 1, (int)((wake - now + NSEC_PER_MSEC - 1) / NSEC_PER_MSEC));
		if (rc > 0) {
			rc = drain(cl, pg);
			if (rc) {
				pg->error = -rc;
				break;
			}
		}
	}
	pg->cpu_ns = clock_thread_cpu_ns();
	__atomic_store_n(&pg->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

int ping_start(struct client *cl)
{
	int rc = pthread_create(&cl->ping->thread, NULL, ping_main, cl);

	if (rc)
		return -rc;
	cl->ping->started = true;
	return 0;
}

void ping_load_over(struct client *cl)
{
	if (cl->ping)
		__atomic_store_n(&cl->ping->load_over, 1, __ATOMIC_RELEASE);
}

bool ping_done(struct client *cl)
{
	return !cl->ping || !cl->ping->started ||
	       __atomic_load_n(&cl->ping->done, __ATOMIC_ACQUIRE);
}

void ping_join(struct client *cl)
{
	if (cl->ping && cl->ping->started) {
		pthread_join(cl->ping->thread, NULL);
		cl->ping->started = false;
	}
}

uint64_t ping_cpu_ns(const struct client *cl)
{
	return cl->ping ? cl->ping->cpu_ns : 0;
}

int ping_error(const struct client *cl)
{
	return cl->ping ? cl->ping->error : 0;
}

json_t *ping_json(const struct client *cl)
{
	const struct ping *pg = cl->ping;
	json_t *o = json_object();
	struct icmp_summary s;

	icmp_stats_summary(&pg->stats, pg->sent, pg->received, &s);
	jout_u64(o, "probes", pg->sent);
	jout_u64(o, "received", pg->received);
	jout_u64(o, "lost", pg->sent - pg->received);
	jout_real(o, "loss_percent", s.loss_percent);
	jout_u64(o, "duplicates", pg->duplicates);
	jout_u64(o, "unreachable", pg->unreachable);
	jout_u64(o, "send_failed", pg->send_failed);
	jout_u64(o, "strays", pg->strays);
	jout_int(o, "count", pg->count);
	jout_real(o, "interval_s", (double)pg->interval_ns / 1e9);
	jout_int(o, "size", pg->size);
	if (pg->received) {
		jout_real(o, "min_ms", s.min_ms);
		jout_real(o, "avg_ms", s.avg_ms);
		jout_real(o, "max_ms", s.max_ms);
		jout_real(o, "mdev_ms", s.mdev_ms);
		jout_real(o, "jitter_ms", s.jitter_ms);
	}
	jout_str(o, "error", pg->error ? strerror(pg->error) : NULL);
	return o;
}

void ping_text(const json_t *icmp)
{
	printf("  ping     %lld probes, %lld received (%.1f%% loss)",
	       json_integer_value(json_object_get(icmp, "probes")),
	       json_integer_value(json_object_get(icmp, "received")),
	       json_number_value(json_object_get(icmp, "loss_percent")));
	if (json_object_get(icmp, "avg_ms"))
		printf(": min %.3f avg %.3f max %.3f mdev %.3f jitter %.3f ms",
		       json_number_value(json_object_get(icmp, "min_ms")),
		       json_number_value(json_object_get(icmp, "avg_ms")),
		       json_number_value(json_object_get(icmp, "max_ms")),
		       json_number_value(json_object_get(icmp, "mdev_ms")),
		       json_number_value(json_object_get(icmp, "jitter_ms")));
	printf("\n");
}

void ping_close(struct client *cl)
{
	struct ping *pg = cl->ping;

	if (!pg)
		return;
	if (pg->fd >= 0)
		close(pg->fd);
	free(pg->tx);
	free(pg->rx);
	free(pg->sent_ns);
	free(pg->replied);
	free(pg);
	cl->ping = NULL;
}

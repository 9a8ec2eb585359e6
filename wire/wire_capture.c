/*
 * Frames for the wire audit from libpcap (see wire_capture.h). A live capture opens its
 * packet socket inside the namespace and returns; the socket stays bound there.
 */
#include "wire_capture.h"

#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <pcap/pcap.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "clock.h"
#include "log.h"
#include "netns.h"

struct wire_capture {
	const struct wire_capture_cfg *cfg;
	pcap_t *pcap;
	pcap_dumper_t *dump;
	FILE *ready; /* the ready file, open until the capture runs */
	int link;
	bool nano;
	unsigned mtu; /* live: the interface's, read as it opened; 0 unknown */
	char filter[WIRE_FILTER_LEN];
	struct wire_audit *audit;
};

/* The MTU of iface in the current namespace, or 0. */
static unsigned iface_mtu(const char *iface)
{
	struct ifreq ifr = { 0 };
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), rc;

	if (fd < 0)
		return 0;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", iface);
	rc = ioctl(fd, SIOCGIFMTU, &ifr);
	close(fd);
	return rc == 0 && ifr.ifr_mtu > 0 ? (unsigned)ifr.ifr_mtu : 0;
}

static int open_live(const struct wire_capture_cfg *c, struct wire_capture *cap)
{
	char errbuf[PCAP_ERRBUF_SIZE] = "";
	int nsfd = -1, saved = -1, rc;

	if (c->netns) {
		nsfd = netns_open(c->netns);
		if (nsfd < 0) {
			log_warnx("network namespace \"%s\": %s", c->netns,
				  nsfd == -ENOENT ? "no such namespace" : strerror(-nsfd));
			return nsfd;
		}
		rc = netns_enter(nsfd, &saved);
		close(nsfd);
		if (rc < 0) {
			log_warnx("cannot enter network namespace \"%s\": %s", c->netns,
				  strerror(-rc));
			return rc;
		}
	}
	cap->pcap = pcap_create(c->iface, errbuf);
	rc = cap->pcap ? 0 : -ENOMEM;
	if (cap->pcap) {
		pcap_set_snaplen(cap->pcap, WIRE_SNAPLEN);
		pcap_set_promisc(cap->pcap, 0);
		pcap_set_timeout(cap->pcap, WIRE_TIMEOUT_MS);
		pcap_set_buffer_size(cap->pcap, (int)c->buffer_bytes);
		pcap_set_tstamp_precision(cap->pcap, PCAP_TSTAMP_PRECISION_NANO);
		rc = pcap_activate(cap->pcap);
	}
	cap->mtu = iface_mtu(c->iface);
	if (saved >= 0 && netns_return(saved) < 0)
		fatalx("cannot return to the original network namespace");
	if (!cap->pcap) {
		log_warnx("capture on \"%s\": %s", c->iface, errbuf);
		return -ENOMEM;
	}
	if (rc == PCAP_ERROR_NO_SUCH_DEVICE) {
		log_warnx("no interface \"%s\" in %s%s%s", c->iface, c->netns ? "namespace \"" : "",
			  c->netns ? c->netns : "this namespace", c->netns ? "\"" : "");
		return -ENOENT;
	}
	if (rc == PCAP_ERROR_PERM_DENIED) {
		log_warnx("capture on \"%s\": permission denied (it needs CAP_NET_RAW)", c->iface);
		return -EPERM;
	}
	if (rc < 0) {
		log_warnx("capture on \"%s\": %s", c->iface, pcap_geterr(cap->pcap));
		return -EIO;
	}
	return 0;
}

/* The kernel filter (WIRE_FILTER_FMT): the tunnel's frames and the fragments the audit counts. */
static int set_filter(const struct wire_capture_cfg *c, pcap_t *p, char *expr, size_t size)
{
	struct bpf_program prog;
	int rc;

	snprintf(expr, size, WIRE_FILTER_FMT, c->udp_port);
	if (pcap_compile(p, &prog, expr, 1, PCAP_NETMASK_UNKNOWN) < 0) {
		log_warnx("capture filter \"%s\": %s", expr, pcap_geterr(p));
		return -EINVAL;
	}
	rc = pcap_setfilter(p, &prog);
	pcap_freecode(&prog);
	if (rc < 0) {
		log_warnx("capture filter on \"%s\": %s", c->iface, pcap_geterr(p));
		return -EIO;
	}
	return 0;
}

/*
 * The ready file is created with the capture open and written when it runs: after
 * wire_priv_drop, which leaves no way to create a file.
 */
static int open_ready(struct wire_capture *cap, const char *path)
{
	cap->ready = fopen(path, "w");
	if (!cap->ready) {
		log_warn("%s", path);
		return -EIO;
	}
	return 0;
}

static int write_ready(struct wire_capture *cap)
{
	const char *path = cap->cfg->ready_file;
	bool ok = fputs("ready\n", cap->ready) != EOF;

	ok = fclose(cap->ready) != EOF && ok;
	cap->ready = NULL;
	if (!ok) {
		log_warn("%s", path);
		return -EIO;
	}
	log_debug("%s: written, the capture is running", path);
	return 0;
}

int wire_capture_open(const struct wire_capture_cfg *c, struct wire_capture **out)
{
	char errbuf[PCAP_ERRBUF_SIZE] = "";
	struct wire_capture *cap = calloc(1, sizeof(*cap));
	int rc = 0;

	if (!cap)
		return -ENOMEM;
	cap->cfg = c;
	if (c->iface) {
		rc = open_live(c, cap);
		if (rc == 0)
			rc = set_filter(c, cap->pcap, cap->filter, sizeof(cap->filter));
		if (rc == 0 && pcap_setnonblock(cap->pcap, 1, errbuf) < 0) {
			log_warnx("capture on \"%s\": %s", c->iface, errbuf);
			rc = -EIO;
		}
	} else {
		cap->pcap = pcap_open_offline_with_tstamp_precision(
			c->read_path, PCAP_TSTAMP_PRECISION_NANO, errbuf);
		if (!cap->pcap) {
			log_warnx("%s: %s", c->read_path, errbuf);
			rc = access(c->read_path, R_OK) < 0 ? -errno : -EINVAL;
		}
	}
	if (rc == 0) {
		cap->link = pcap_datalink(cap->pcap);
		/* libpcap hands LINKTYPE_RAW over as the platform's DLT_RAW. */
		if (cap->link == DLT_RAW)
			cap->link = WIRE_LINK_RAW;
		cap->nano = pcap_get_tstamp_precision(cap->pcap) == PCAP_TSTAMP_PRECISION_NANO;
		if (!wire_link_name(cap->link)) {
			log_warnx(
				"%s: link type %s is not one tunbed-wire reads (EN10MB, LINUX_SLL, "
				"LINUX_SLL2, RAW, IPV4, IPV6, NULL)",
				c->iface ? c->iface : c->read_path,
				pcap_datalink_val_to_name(cap->link) ?: "unknown");
			rc = -EPROTONOSUPPORT;
		}
	}
	if (rc == 0 && c->write_path) {
		cap->dump = pcap_dump_open(cap->pcap, c->write_path);
		if (!cap->dump) {
			log_warnx("%s", pcap_geterr(cap->pcap));
			rc = -EIO;
		}
	}
	if (rc == 0 && c->iface && c->ready_file)
		rc = open_ready(cap, c->ready_file);
	if (rc < 0) {
		wire_capture_close(cap);
		return rc;
	}
	if (c->iface)
		log_info("capture on \"%s\"%s%s%s: link %s, buffer %llu bytes, snap length %d, "
			 "filter \"%s\"",
			 c->iface, c->netns ? " in namespace \"" : "", c->netns ? c->netns : "",
			 c->netns ? "\"" : "", wire_link_name(cap->link),
			 (unsigned long long)c->buffer_bytes, pcap_snapshot(cap->pcap),
			 cap->filter);
	else
		log_info("reading %s: link %s, %s timestamps", c->read_path,
			 wire_link_name(cap->link), cap->nano ? "nanosecond" : "microsecond");
	if (c->write_path)
		log_info("writing the frames read to %s", c->write_path);
	*out = cap;
	return 0;
}

unsigned wire_capture_mtu(const struct wire_capture *cap)
{
	return cap->mtu;
}

int wire_capture_link(const struct wire_capture *cap)
{
	return cap->link;
}

static void on_frame(u_char *arg, const struct pcap_pkthdr *h, const u_char *bytes)
{
	struct wire_capture *cap = (struct wire_capture *)arg;
	uint64_t ns = (uint64_t)h->ts.tv_sec * NSEC_PER_SEC +
		      (uint64_t)h->ts.tv_usec * (cap->nano ? 1 : 1000);

	if (cap->dump)
		pcap_dump((u_char *)cap->dump, h, bytes);
	wire_audit_frame(cap->audit, bytes, h->caplen, h->len, ns);
}

static bool stop_requested(int fd)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	struct signalfd_siginfo si;

	if (fd < 0 || poll(&pfd, 1, 0) <= 0)
		return false;
	/* Consumed so that the next poll sleeps; which signal it was does not matter. */
	(void)!read(fd, &si, sizeof(si));
	return true;
}

static int run_file(struct wire_capture *cap)
{
	for (uint64_t n = 1;; n++) {
		struct pcap_pkthdr *h;
		const u_char *bytes;
		int rc = pcap_next_ex(cap->pcap, &h, &bytes);

		if (rc == PCAP_ERROR_BREAK)
			return 0;
		if (rc < 0) {
			log_warnx("%s: frame %llu: %s", cap->cfg->read_path, (unsigned long long)n,
				  pcap_geterr(cap->pcap));
			return -EIO;
		}
		on_frame((u_char *)cap, h, bytes);
		if (n % 65536 == 0 && stop_requested(cap->cfg->stop_fd)) {
			log_info("%s: signalled, stopping after frame %llu", cap->cfg->read_path,
				 (unsigned long long)n);
			return 0;
		}
	}
}

static int run_live(struct wire_capture *cap)
{
	const struct wire_capture_cfg *c = cap->cfg;
	uint64_t now = clock_mono_ns();
	uint64_t deadline = c->time_s > 0 ? now + (uint64_t)(c->time_s * NSEC_PER_SEC) : 0;
	uint64_t drain_end = 0, drained = 0;
	struct pollfd pfd[2] = {
		{ .fd = pcap_get_selectable_fd(cap->pcap), .events = POLLIN },
		{ .fd = c->stop_fd, .events = POLLIN },
	};

	for (;;) {
		int wait_ms = WIRE_TIMEOUT_MS, n;

		if (poll(pfd, c->stop_fd >= 0 ? 2 : 1, wait_ms) < 0 && errno != EINTR) {
			log_warn("poll");
			return -EIO;
		}
		n = pcap_dispatch(cap->pcap, -1, on_frame, (u_char *)cap);
		if (n < 0) {
			log_warnx("capture on \"%s\" stopped: %s", c->iface,
				  pcap_geterr(cap->pcap));
			return -EIO;
		}
		now = clock_mono_ns();
		if (drain_end) {
			drained += (uint64_t)n;
		} else if ((deadline && now >= deadline) || stop_requested(c->stop_fd)) {
			log_info("capture on \"%s\": %s, reading what the kernel still holds",
				 c->iface,
				 deadline && now >= deadline ? "time is up" : "signalled");
			drain_end = now + WIRE_DRAIN_MS * NSEC_PER_MSEC;
		}
		if (drain_end && now >= drain_end && n == 0) {
			log_debug("capture on \"%s\": %llu frames came after the stop", c->iface,
				  (unsigned long long)drained);
			return 0;
		}
	}
}

int wire_capture_run(struct wire_capture *cap, struct wire_audit *a)
{
	int rc;

	cap->audit = a;
	if (cap->ready) {
		rc = write_ready(cap);
		if (rc < 0)
			return rc;
	}
	rc = cap->cfg->iface ? run_live(cap) : run_file(cap);
	if (cap->dump && pcap_dump_flush(cap->dump) < 0) {
		log_warnx("%s: write failed", cap->cfg->write_path);
		rc = -EIO;
	}
	return rc;
}

void wire_capture_source(struct wire_capture *cap, struct wire_source *src)
{
	const struct wire_capture_cfg *c = cap->cfg;
	struct pcap_stat st;

	memset(src, 0, sizeof(*src));
	src->live = c->iface != NULL;
	src->netns = c->netns;
	src->iface = c->iface;
	src->path = c->read_path;
	if (src->live && pcap_stats(cap->pcap, &st) == 0) {
		src->has_stats = true;
		src->received = st.ps_recv;
		src->dropped = st.ps_drop;
	}
}

void wire_capture_close(struct wire_capture *cap)
{
	if (!cap)
		return;
	if (cap->ready)
		fclose(cap->ready);
	if (cap->dump)
		pcap_dump_close(cap->dump);
	if (cap->pcap)
		pcap_close(cap->pcap);
	free(cap);
}

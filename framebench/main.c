/*
 * tunbed-framebench: the per-frame cost of the kernel's frame interfaces a userspace gateway
 * can send and receive with (see --help and docs/framebench.md).
 */
#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "clock.h"
#include "jout.h"
#include "log.h"
#include "options.h"
#include "recv_vnet.h"
#include "sigfd.h"
#include "testlink.h"

enum { EXIT_FAIL = 1, EXIT_USAGE = 2 };

static int src_mac(const char *dev, uint8_t mac[ETH_ALEN])
{
	struct ifreq ifr = { 0 };
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), rc = 0;

	if (fd < 0)
		return -errno;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", dev);
	if (ioctl(fd, SIOCGIFHWADDR, &ifr) < 0)
		rc = -errno;
	else
		memcpy(mac, ifr.ifr_hwaddr.sa_data, ETH_ALEN);
	close(fd);
	return rc;
}

static int emit(json_t *doc)
{
	int rc = doc ? jout_dump(stdout, doc, 0) : -ENOMEM;

	json_decref(doc);
	if (rc)
		log_warnx("cannot write the result: %s", strerror(-rc));
	return rc ? EXIT_FAIL : 0;
}

/* What send --via tap adds to its counts: the superpacket and where it went. */
static int tap_json(json_t *doc, const struct fb_options *o)
{
	const struct send_cfg *c = &o->send;

	return jout_str(doc, "encap", fb_encap_name(c->frame.encap)) ||
	       jout_str(doc, "redirect", o->redirect) || jout_u64(doc, "segs", c->segs) ||
	       jout_u64(doc, "gso_size", send_gso_size(c)) ||
	       jout_u64(doc, "super_len", send_tap_spec(c).len);
}

static int run_send(struct fb_options *o)
{
	struct send_cfg *c = &o->send;
	/* A TAP's frames come from the interface they are redirected to, or from the TAP's far
	 * side (the kernel takes them whatever their source). */
	const char *from = o->redirect ? o->redirect : o->dev;
	struct send_result r;
	char limit[64] = "";
	uint64_t start;
	json_t *doc;
	int rc;

	rc = src_mac(from, c->frame.src);
	if (rc) {
		log_warnx("cannot read the address of %s: %s", from, strerror(-rc));
		return EXIT_FAIL;
	}
	if (o->seconds > 0)
		snprintf(limit, sizeof(limit), "%g s", o->seconds);
	if (c->frames)
		snprintf(limit + strlen(limit), sizeof(limit) - strlen(limit), "%s%llu frames",
			 o->seconds > 0 ? " or " : "", (unsigned long long)c->frames);
	log_info("send --via %s on %s: %zu-byte frames, checksum %s, for %s",
		 fb_send_via_name(c->via), o->dev, c->frame.len,
		 c->csum_full ? "completed here" : "left partial", limit);
	if (c->via == SEND_TAP)
		log_info("send --via tap: %s superpackets of %u segments (%zu bytes), to %s",
			 fb_encap_name(c->frame.encap), c->segs, send_tap_spec(c).len,
			 o->redirect ? o->redirect : "the stack");
	start = clock_mono_ns();
	if (o->seconds > 0)
		c->until_ns = start + (uint64_t)(o->seconds * NSEC_PER_SEC);
	rc = send_run(c, &r);
	if (rc) {
		log_warnx("send --via %s on %s: %s", fb_send_via_name(c->via), o->dev,
			  strerror(-rc));
		return EXIT_FAIL;
	}
	doc = json_object();
	if (doc && (jout_str(doc, "via", fb_send_via_name(c->via)) ||
		    jout_str(doc, "csum", c->csum_full ? "full" : "partial") ||
		    jout_u64(doc, "len", c->frame.len) || jout_u64(doc, "frames", r.frames) ||
		    jout_u64(doc, "calls", r.calls) ||
		    jout_real(doc, "seconds", clock_secs(clock_mono_ns() - start)) ||
		    (c->via == SEND_TAP && tap_json(doc, o)))) {
		json_decref(doc);
		doc = NULL;
	}
	return emit(doc);
}

/* recv --via vnet's counts: what recv's are, and the superpackets'. */
static json_t *vnet_json(const struct recv_vnet_result *r)
{
	json_t *doc = json_object();

	if (doc &&
	    (jout_str(doc, "via", "vnet") || jout_u64(doc, "frames", r->frames) ||
	     jout_u64(doc, "bytes", r->bytes) || jout_u64(doc, "len_min", r->len_min) ||
	     jout_u64(doc, "len_max", r->len_max) || jout_u64(doc, "gre", r->gre) ||
	     jout_u64(doc, "gre_udp", r->gre_udp) || jout_u64(doc, "not_ours", r->not_ours) ||
	     jout_u64(doc, "partial", r->partial) || jout_u64(doc, "gso", r->gso) ||
	     jout_u64(doc, "gso_tcpv4", r->gso_tcpv4) ||
	     jout_u64(doc, "gso_size_min", r->gso_size_min) ||
	     jout_u64(doc, "gso_size_max", r->gso_size_max) ||
	     jout_u64(doc, "gso_segs", r->gso_segs) || jout_u64(doc, "drops", r->drops) ||
	     jout_u64(doc, "wakeups", r->wakeups))) {
		json_decref(doc);
		doc = NULL;
	}
	return doc;
}

static int run_recv_vnet(struct fb_options *o, int sfd)
{
	struct recv_vnet_result r;
	struct recv_vnet rv;
	int rc;

	rc = recv_vnet_open(&rv, o->recv.ifindex, !o->recv.no_drop);
	if (rc) {
		log_warnx("recv --via vnet on %s: %s", o->dev, strerror(-rc));
		return EXIT_FAIL;
	}
	log_info("recv --via vnet on %s: ready", o->dev);
	printf("{\"ready\": true}\n");
	fflush(stdout);
	rc = recv_vnet_run(&rv, sfd, o->recv.frames, &r);
	recv_vnet_close(&rv);
	if (rc) {
		log_warnx("recv: poll: %s", strerror(-rc));
		return EXIT_FAIL;
	}
	return emit(vnet_json(&r));
}

static int run_recv(struct fb_options *o)
{
	struct recv_result r = { 0 };
	struct recv rv;
	json_t *doc;
	int sfd, rc;

	sfd = sigfd_open(SIGFD_PIPE);
	if (sfd < 0) {
		log_warn("signalfd");
		return EXIT_FAIL;
	}
	if (o->recv.via == RECV_VNET)
		return run_recv_vnet(o, sfd);
	rc = recv_open(&rv, &o->recv);
	if (rc) {
		log_warnx("recv --via %s on %s: %s", fb_recv_via_name(o->recv.via), o->dev,
			  strerror(-rc));
		return EXIT_FAIL;
	}
	log_info("recv --via %s on %s%s: ready", fb_recv_via_name(o->recv.via), o->dev,
		 o->recv.verify ? ", verifying checksums" : "");
	printf("{\"ready\": true}\n");
	fflush(stdout);
	rc = recv_run(&rv, sfd, &r);
	recv_close(&rv);
	if (rc) {
		log_warnx("recv: poll: %s", strerror(-rc));
		return EXIT_FAIL;
	}
	doc = json_object();
	if (doc &&
	    (jout_str(doc, "via", fb_recv_via_name(o->recv.via)) ||
	     jout_bool(doc, "verify", o->recv.verify) || jout_u64(doc, "frames", r.frames) ||
	     jout_u64(doc, "bytes", r.bytes) || jout_u64(doc, "partial", r.partial) ||
	     jout_u64(doc, "verified", r.verified) || jout_u64(doc, "bad_csum", r.bad_csum) ||
	     jout_u64(doc, "not_ours", r.not_ours) || jout_u64(doc, "drops", r.drops) ||
	     jout_u64(doc, "wakeups", r.wakeups))) {
		json_decref(doc);
		doc = NULL;
	}
	return emit(doc);
}

/*
 * The interface ifname, as a test's link (testlink.h): its index, or -EXIT_USAGE or
 * -EXIT_FAIL after one line. want_tap: it must be a TAP.
 */
static int interface(const char *ifname, bool any, bool want_tap)
{
	unsigned ifindex = if_nametoindex(ifname);
	int kind;

	if (!ifindex) {
		log_warnx("no interface '%s' here", ifname);
		return -EXIT_FAIL;
	}
	kind = testlink_check(ifname, any);
	if (kind < 0)
		return kind == -EPERM ? -EXIT_USAGE : -EXIT_FAIL;
	if (want_tap && kind != TESTLINK_TAP) {
		log_warnx(
			"%s is not a TAP: --via tap writes into one (ip tuntap add NAME mode tap)",
			ifname);
		return -EXIT_USAGE;
	}
	return (int)ifindex;
}

int main(int argc, char **argv)
{
	struct fb_options o;
	int rc, ifindex;

	log_init("tunbed-framebench", LOG_LEVEL_WARN);
	rc = fb_options_parse(&o, argc, argv);
	if (rc)
		return rc > 0 ? 0 : EXIT_USAGE;
	log_init("tunbed-framebench", o.verbose);
	ifindex = interface(o.dev, o.any_interface, o.cmd == FB_SEND && o.send.via == SEND_TAP);
	if (ifindex < 0)
		return -ifindex;
	o.send.ifindex = o.recv.ifindex = ifindex;
	if (o.redirect) {
		rc = interface(o.redirect, o.any_interface, false);
		if (rc < 0)
			return -rc;
		o.send.redirect = rc;
	}
	return o.cmd == FB_SEND ? run_send(&o) : run_recv(&o);
}

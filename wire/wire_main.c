/*
 * tunbed-wire: the wire audit of the testbed (docs/wire.md).
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "jout.h"
#include "log.h"
#include "sigfd.h"
#include "wire_options.h"
#include "wire_priv.h"

int main(int argc, char **argv)
{
	static struct wire_options o;
	static struct wire_audit a;
	struct wire_capture *cap;
	struct wire_source src;
	json_t *doc;
	int rc, status = 0;

	log_init(argv[0], LOG_LEVEL_WARN);
	rc = wire_options_parse(&o, argc, argv);
	if (rc) {
		wire_options_fini(&o);
		return rc > 0 ? 0 : 2;
	}
	log_init(argv[0], o.verbose);
	/* SIGINT and SIGTERM end the capture, not the process: the report still comes out. */
	o.cap.stop_fd = sigfd_open(SIGFD_NONBLOCK);
	if (o.cap.stop_fd < 0)
		fatalx("signalfd: %s", strerror(-o.cap.stop_fd));
	if (wire_capture_open(&o.cap, &cap) < 0)
		return 1;
	/* A TCP superpacket longer than the link carries counts as its segments (wire.md). */
	if (!o.expect.link_mtu)
		o.expect.link_mtu = wire_capture_mtu(cap);
	if (wire_audit_init(&a, &o.expect, wire_capture_link(cap)) < 0)
		fatalx("out of memory");
	/*
	 * Everything the run needs is open: from here on frames are hostile input. jansson
	 * draws its hash seed from /dev/urandom at the first object; draw it while files open.
	 */
	json_object_seed(0);
	if (wire_priv_drop(&o.user) < 0) {
		wire_capture_close(cap);
		wire_audit_fini(&a);
		return 1;
	}
	if (wire_capture_run(cap, &a) < 0)
		status = 1;
	wire_audit_finish(&a);
	wire_capture_source(cap, &src);
	if (src.has_stats)
		log_info("the capture socket took %llu frames and dropped %llu (buffer full)",
			 (unsigned long long)src.received, (unsigned long long)src.dropped);
	log_info("%llu frames: %llu tunnel, %llu other, %llu snapped; %llu with a violation",
		 (unsigned long long)a.frames, (unsigned long long)a.tunnel_frames,
		 (unsigned long long)a.other_frames, (unsigned long long)a.snapped_frames,
		 (unsigned long long)a.violation_frames);
	doc = wire_report_json(&a, &src, o.top);
	if (!doc)
		fatalx("out of memory");
	if (o.json)
		jout_dump(stdout, doc, JOUT_PRETTY);
	else
		wire_report_text(stdout, doc);
	if (status == 0 && o.check && a.violation_frames)
		status = WIRE_EXIT_VIOLATIONS;
	json_decref(doc);
	wire_capture_close(cap);
	wire_audit_fini(&a);
	wire_options_fini(&o);
	close(o.cap.stop_fd);
	return status;
}

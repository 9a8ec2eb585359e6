/*
 * libFuzzer harness for the receive side of gregw: any bytes from the wire go through
 * decap() under each GRE configuration, both outer families, and, read as a GRE-in-UDP
 * UDP_GRO burst, through decap_gre() datagram by datagram; and through a tunnel table of
 * two peers and several keys, whose tunnel's prefix must then hold the inner source. What it
 * accepts must point inside its datagram and be a well-formed inner packet of the advertised
 * family.
 */
#include <arpa/inet.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "encap.h"
#include "tunfile.h"
#include "tunnels.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The table's tunnels: gregw at 198.18.0.2, peers 198.18.0.1 (keys 1, 2 with seq, none) and
 * 198.18.0.3 (key 1 with csum). */
static const char table_file[] =
	"[tunnel a]\npeer = 198.18.0.1\nkey = 1\nprefixes = 198.18.64.0/24, 2001:2:0:4000::/64\n"
	"[tunnel b]\npeer = 198.18.0.1\nkey = 2\nseq = yes\nprefixes = 198.18.65.0/24\n"
	"[tunnel c]\npeer = 198.18.0.1\nprefixes = 198.18.0.0/17\n"
	"[tunnel d]\npeer = 198.18.0.3\nkey = 1\ncsum = yes\nprefixes = 198.18.66.0/24\n";

/* Through the table: a packet it accepts came through a tunnel whose prefix holds its inner
 * source (no other tunnel's does: the longest one is its). */
static void check_table(const struct encap_cfg *c, const struct tunnels *t, const uint8_t *data,
			size_t size)
{
	struct decap_result r;
	struct ip_info ip;

	if (decap(c, t, data, size, size, &r) != DROP_NONE)
		return;
	if (!r.tn || r.inner < data || r.inner + r.inner_len > data + size ||
	    ip_parse(r.inner, r.inner_len, false, &ip) < 0 || ip.tot_len != r.inner_len)
		abort();
	if (tunnels_encap(t, ip.family, ip.src) != TUNNELS_NONE &&
	    tunnels_at(t, tunnels_encap(t, ip.family, ip.src)) != r.tn)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct encap_cfg cfgs[2][8], tab_cfg;
	static struct tunnels *table;
	static const struct encap_prefix all[] = { { .family = AF_INET }, { .family = AF_INET6 } };
	static int ready;
	struct decap_result r;
	struct ip_info ip;

	if (!ready) {
		for (int f = 0; f < 2; f++) {
			for (unsigned flags = 0; flags < 8; flags++) {
				struct encap_cfg *c = &cfgs[f][flags];

				c->family = f ? AF_INET6 : AF_INET;
				inet_pton(c->family, f ? "2001:2::1" : "198.18.0.1", c->local);
				inet_pton(c->family, f ? "2001:2::2" : "198.18.0.2", c->remote);
				c->gre_flags = flags;
				c->key = 7;
				c->mtu = 1400;
				/* Any inner source: what decap accepts must still be well formed. */
				encap_sources(c, all, 2, NULL, 0);
				encap_cfg_finish(c);
			}
		}
		{
			struct tunfile f;
			struct line_error err;
			static const struct encap_prefix subnet[] = {
				{ .family = AF_INET, .len = 24, .addr = { 198, 19 } }
			};

			if (tunfile_parse(table_file, sizeof(table_file) - 1, false, &f, &err) ||
			    tunnels_build(f.specs, f.n, NULL, &table))
				abort();
			tunfile_free(&f);
			tab_cfg = cfgs[0][0];
			memcpy(tab_cfg.local, cfgs[0][0].remote, 16);
			memcpy(tab_cfg.remote, cfgs[0][0].local, 16);
			tab_cfg.tunnel_sources = true;
			encap_sources(&tab_cfg, subnet, 1, NULL, 0);
		}
		ready = 1;
	}
	check_table(&tab_cfg, table, data, size);
	for (int f = 0; f < 2; f++) {
		for (unsigned flags = 0; flags < 8; flags++) {
			/* The peer's view: our local is its remote. */
			struct encap_cfg peer = cfgs[f][flags];

			memcpy(peer.local, cfgs[f][flags].remote, 16);
			memcpy(peer.remote, cfgs[f][flags].local, 16);
			if (decap(&peer, NULL, data, size, size, &r) != DROP_NONE)
				continue;
			if (r.inner < data || r.inner + r.inner_len > data + size)
				abort();
			if (ip_parse(r.inner, r.inner_len, false, &ip) < 0 ||
			    ip.tot_len != r.inner_len)
				abort();
		}
	}
	/*
	 * GRE-in-UDP: the input is a UDP_GRO read, its first two bytes the segment size the
	 * kernel reported (0: one datagram); each datagram goes to decap_gre as the worker
	 * cuts them (the last one may be short).
	 */
	if (size >= 2) {
		size_t seg = (size_t)data[0] << 8 | data[1], len = size - 2;
		const uint8_t *buf = data + 2;

		if (!seg || seg > len)
			seg = len;
		for (size_t off = 0; off < len; off += seg) {
			size_t dlen = len - off < seg ? len - off : seg;

			for (unsigned flags = 0; flags < 8; flags++) {
				struct encap_cfg peer = cfgs[0][flags];

				peer.udp = true;
				peer.udp_port = 4754;
				if (decap_gre(&peer, NULL, peer.remote, buf + off, dlen, &r) !=
				    DROP_NONE)
					continue;
				if (r.inner < buf + off || r.inner + r.inner_len > buf + off + dlen)
					abort();
				if (ip_parse(r.inner, r.inner_len, false, &ip) < 0 ||
				    ip.tot_len != r.inner_len)
					abort();
			}
		}
	}
	return 0;
}

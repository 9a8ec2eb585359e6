/*
 * tc programs at an interface's ingress (tcx, Linux 6.6), written out as instructions
 * (ebpf.h) and attached by BPF links: each goes when its descriptor closes, also when the
 * process is killed.
 *  - The drop of plain GRE (or GRE-in-UDP) from the peer: a packet socket takes its copy
 *    before it (taps run before ingress), so the IP stack never climbs each packet up to a
 *    sink socket. gregw's receive rings, and tunbed-framebench's ring receiver, which
 *    measures gregw's way.
 *  - At a TAP's ingress, what the kernel does with a superpacket written into it: redirect it
 *    to another interface's egress (bpf_redirect), or first put an outer IP and GRE header
 *    before it (bpf_skb_adjust_room with the GRE encapsulation flags: a GSO skb of GRE the
 *    kernel, or the device, segments) and then redirect it or pass it on to the stack. gregw's
 *    TAP transport (gateway/tx_tap.c) and tunbed-framebench's TAP sender.
 */
#ifndef TUNBED_TCX_H
#define TUNBED_TCX_H

#include <stdbool.h>
#include <stdint.h>

/*
 * Loads the drop of GRE (IP protocol 47, fragments too; over IPv6 also behind a destination
 * options header) from remote to local (4 or 16 bytes each of family, network order) and
 * attaches it at ingress of ifindex. Returns the link's fd, to keep open while the gateway
 * runs, or -errno (EINVAL or ENOTSUPP from a kernel without tcx). Setup only.
 */
int tcx_gre_drop_attach(int ifindex, int family, const uint8_t *local, const uint8_t *remote);

/*
 * The same for GRE-in-UDP: UDP from remote to local's port (network order addresses; port
 * in host order), IPv4 of any header length, IPv6 with UDP right after the fixed header.
 * Fragments, and UDP behind an IPv6 extension header, go on to the stack, whose socket on the
 * port takes them. Returns the link's fd or -errno, as tcx_gre_drop_attach. Setup only.
 */
int tcx_udp_drop_attach(int ifindex, int family, const uint8_t *local, const uint8_t *remote,
			uint16_t port);

/* What the program at a TAP's ingress does with each frame written into the TAP. */
struct tcx_tap {
	int redirect;		  /* the ifindex to redirect to, at egress; 0: on to the stack */
	bool gre;		  /* first the outer IP and GRE header, from src to dst */
	int family;		  /* the outer header's: AF_INET or AF_INET6 */
	uint8_t src[16], dst[16]; /* network order, 4 or 16 bytes used */
	uint8_t ttl;		  /* TTL or hop limit; 0: 64 */
	bool ttl_inherit;	  /* ... the inner packet's instead */
	bool dscp_inherit;	  /* the outer DSCP the inner one's (RFC 2983)... */
	uint8_t dscp;		  /* ... else this one, 0 to 63 */
	bool ecn_copy;		  /* the outer ECN field the inner one's (RFC 6040, normal mode);
				   * else Not-ECT */
	bool key;		  /* a GRE key (RFC 2890) in the header */
	uint32_t key_value;
	/* Each frame's key instead of key and key_value (gregw's tunnels, whose keys change
	 * at run time without a new program): the frame's Ethernet source address carries the
	 * GRE header's first 16 bits (TCX_TAP_FRAME_FLAGS: GRE_BIT_K, or 0 for no key) and the
	 * key (TCX_TAP_FRAME_KEY, big-endian), and the program writes src_mac back over them. */
	bool key_in_frame;
	uint8_t src_mac[6];
};

/* With key_in_frame: where the frame carries its GRE flags and key (its Ethernet source). */
enum { TCX_TAP_FRAME_FLAGS = 6, TCX_TAP_FRAME_KEY = 8 };

/*
 * Attaches the program of t at tcx ingress of ifindex (a TAP). With gre, each frame must be
 * an Ethernet header and an IPv4 or IPv6 packet (a TCP superpacket with its virtio header's
 * GSO fields, or one packet): the program makes room after the Ethernet header
 * (bpf_skb_adjust_room, BPF_F_ADJ_ROOM_ENCAP_L3_IPV4 or _IPV6 | ENCAP_L4_GRE | FIXED_GSO:
 * gso_size stays the writer's), writes the outer header there (IPv4: DF, identification 0,
 * its length from the skb's, its checksum; IPv6: flow label 0; the DS field and TTL as t says,
 * from the frame's IP header where they are inherited or copied) and GRE with the packet's
 * EtherType as its protocol type, and sets the frame's EtherType to the outer family's (with
 * key_in_frame, GRE's key as the frame says, and its source address src_mac). A frame of
 * another EtherType, whose outer packet would pass 65535 bytes, or (key_in_frame) whose GRE
 * flags are neither GRE_BIT_K nor 0, is dropped. Returns the link's fd (its close detaches
 * it) or -errno (EINVAL: a kernel without tcx, or t asks for nothing: neither a redirect nor
 * GRE). Setup only.
 */
int tcx_tap_attach(int ifindex, const struct tcx_tap *t);

#endif

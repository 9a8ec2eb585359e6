/*
 * Kernel interfaces newer than the uapi headers this builds with (Debian 12's linux-libc-dev,
 * Linux 6.1), each with the version it came in. Every definition yields to the system's own
 * when the headers have it, so a build on newer headers uses theirs.
 */
#ifndef TUNBED_UAPI_NEWER_H
#define TUNBED_UAPI_NEWER_H

#include <linux/if_tun.h>
#include <linux/virtio_net.h>

/*
 * Linux 6.17: GSO over a UDP tunnel in the virtio header (uapi/linux/virtio_net.h). A TAP
 * takes it when its header size (TUNSETVNETHDRSZ) is at least that of
 * struct virtio_net_hdr_v1_hash_tunnel, 24 bytes; it hands such packets to a reader only
 * after TUNSETOFFLOAD with TUN_F_UDP_TUNNEL_GSO.
 */
#ifndef VIRTIO_NET_HDR_GSO_UDP_TUNNEL_IPV4
#define VIRTIO_NET_HDR_GSO_UDP_TUNNEL_IPV4 0x20 /* outer IPv4 and UDP before the inner packet */
#define VIRTIO_NET_HDR_GSO_UDP_TUNNEL_IPV6 0x40 /* outer IPv6 and UDP */
#define VIRTIO_NET_HDR_F_UDP_TUNNEL_CSUM   8	/* the outer UDP checksum is left to the device */

struct virtio_net_hdr_v1_hash_tunnel {
	struct virtio_net_hdr_v1_hash hash_hdr; /* 6.17 splits hash_value in two 16-bit halves */
	__le16 outer_th_offset;			/* the outer UDP header, from the frame's start */
	__le16 inner_nh_offset;			/* the inner network header, likewise */
};
#endif

/* Linux 6.2 (uapi/linux/if_tun.h): TUN offers UDP segmentation (USO). */
#ifndef TUN_F_USO4
#define TUN_F_USO4 0x20
#define TUN_F_USO6 0x40
#endif

/* Linux 6.17 (uapi/linux/if_tun.h): TUNSETOFFLOAD's bits for GSO over a UDP tunnel. */
#ifndef TUN_F_UDP_TUNNEL_GSO
#define TUN_F_UDP_TUNNEL_GSO	  0x080
#define TUN_F_UDP_TUNNEL_GSO_CSUM 0x100
#endif

#endif

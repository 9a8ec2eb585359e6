/*
 * tunbed-framebench's limits, in one place, with where each number comes from.
 */
#ifndef TUNBED_FB_LIMITS_H
#define TUNBED_FB_LIMITS_H

enum fb_limits {
	FB_FRAME_LEN = 1514,	 /* a full-sized frame: Ethernet header + an outer MTU of 1500 */
	FB_BATCH = 64,		 /* frames a sendmmsg, a TX ring flush or an AF_XDP kick */
	FB_TXRING_FRAMES = 1024, /* send ring frames, a page holding two */
	FB_TXRING_FRAME = 2048,
	FB_XSK_FRAMES = 4096, /* umem chunks and each ring's entries: a power of two */
	FB_XSK_CHUNK = 2048,  /* a chunk: the frame after the kernel's XDP headroom (256) */
	FB_POLL_MS = 100,     /* longest sleep of a loop that also watches the clock */
};

#endif

/*
 * gregw's control socket: a Unix stream socket. A client sends one command line ("stats",
 * "flows", a tunnel change) and reads one JSON document back, then the server closes the
 * connection. A client that makes many changes asks first to keep the connection: its first
 * line is "keep" (answered {"keep":true}); then every line is a command, answered in order,
 * each reply one line of JSON ending in a newline, one command at a time (the next line is
 * taken once the reply before it is made, and none while replies of an earlier pass wait to
 * be read); the client may send its lines ahead. A kept connection closes when its client
 * ends its writing (after the replies to what it sent), after a line too long (where the
 * next one begins is unknown), and at its deadlines (docs/gregw.md, "Telemetry"). The
 * server side never blocks: its connections are non-blocking, polled by the main loop with
 * the rest of its fds, bounded in number, and each has a deadline.
 */
#ifndef TUNBED_GW_CTL_H
#define TUNBED_GW_CTL_H

#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "gw_limits.h"
#include "privs.h"

/* One client connection: reading its command lines, writing their replies. */
struct ctl_conn {
	int fd;		      /* -1: a free slot */
	uint64_t deadline_ns; /* CLOCK_MONOTONIC: closed then, whatever its state */
	uint64_t seq;	      /* the number of its connect, renewed at each command: the id of
			       * its command's reply; the lowest is evicted for a new one */
	size_t in_len;
	char in[CTL_CMD_MAX]; /* what came and is not answered: lines, or part of one */
	char *out;	      /* replies to send (malloc'd), in order; NULL: none */
	size_t out_len, out_off;
	bool later;   /* a command's reply comes later (ctl_reply_later): no line is read */
	bool started; /* a line was answered */
	bool keep;    /* its first line was "keep": many commands, a reply of one line each */
	bool last;    /* closed once out is sent: a one-shot's reply, or the last line */
	bool eof;     /* the client has ended its writing */
	bool ready;   /* a line is held, to be answered at the next pass (not by poll) */
};

struct ctl_server {
	int fd;	      /* the listening socket; -1: none */
	uint64_t seq; /* connects and commands so far: the last ctl_conn.seq given */
	struct ctl_conn conns[CTL_CONNS];
};

/*
 * The reply to a command line of len bytes (without its newline; it may hold any byte) of
 * connection id: a malloc'd buffer of *out_len bytes that the server frees, NULL to close
 * without one, or CTL_LATER: the reply comes later, given to ctl_reply_later with id. With
 * line (a kept connection), the reply must be one line ending in its newline; otherwise it
 * is a document of any lines (the connection closes after it).
 */
typedef char *ctl_reply_fn(void *arg, uint64_t id, const char *cmd, size_t len, bool line,
			   size_t *out_len);

extern char ctl_later_mark;
#define CTL_LATER (&ctl_later_mark)

/* Pollfds the server needs: the listener and one per connection slot, at fixed places. */
enum { CTL_POLLFDS = 1 + CTL_CONNS };

/*
 * Listens on path, creating its directories (0755). The socket file is made mode 0600
 * whatever the umask: only its owner (root, or owner when owner->set: --user) may connect.
 * With an owner, a directory made for the socket is 0700 and the owner's, and -EACCES is
 * returned unless the owner may reach the directory and remove the socket from it (at exit,
 * as that user). A live socket there (someone answers) is
 * refused with -EADDRINUSE; a stale one (a socket file nobody answers) is replaced; anything
 * else at path (not a socket) is refused with -EEXIST. Fills *s. Returns 0 or -errno. Main
 * thread.
 */
int ctl_listen(struct ctl_server *s, const char *path, const struct privs_user *owner);

/* Closes the listener and every connection (their replies unsent). */
void ctl_close(struct ctl_server *s);

/*
 * Fills pfd[0..CTL_POLLFDS) for poll (a free slot's fd is -1, which poll skips) and lowers
 * *timeout_ms (poll's: -1 is none) to the nearest deadline, to 0 when a kept connection
 * holds a line to answer (ctl_handle answers at most CTL_LINES_PASS of a connection's lines
 * in a pass, and a reply given later lets the next line be read). now_ns is CLOCK_MONOTONIC.
 */
void ctl_pollfds(const struct ctl_server *s, struct pollfd *pfd, uint64_t now_ns, int *timeout_ms);

/*
 * After poll: reads, answers (fn builds each reply) and writes what the connections are
 * ready for, closes those past their deadline, and accepts new ones (when every slot is
 * taken, the connection of the lowest seq, whose connect or command came first, is closed
 * for the new one). A kept connection's replies answered at once in one pass leave in one
 * send. Never blocks.
 */
void ctl_handle(struct ctl_server *s, const struct pollfd *pfd, uint64_t now_ns, ctl_reply_fn *fn,
		void *arg);

/*
 * The reply of len bytes (malloc'd; the server frees it) to connection id, whose command's
 * reply fn said CTL_LATER; sent as far as the socket takes it now, the rest when poll says
 * (a kept connection's next line is answered at the next ctl_handle). When the connection
 * is gone (closed by its client, evicted, or past CTL_REPLY_MS since its command), the reply
 * is freed. NULL out closes the connection. Main thread.
 */
void ctl_reply_later(struct ctl_server *s, uint64_t id, char *out, size_t len, uint64_t now_ns);

/* Whether the reply to connection id's command must be one line (the connection is kept:
 * ctl_reply_fn's line); false when the connection is gone. Main thread. */
bool ctl_line(const struct ctl_server *s, uint64_t id);

/*
 * Writes a command line of len bytes into buf as printable ASCII for a message: bytes
 * outside 0x20-0x7e and the backslash as \xNN and \\. Truncates to fit size (at least 1).
 * Returns buf.
 */
char *ctl_quote(const char *cmd, size_t len, char *buf, size_t size);

/* Connects to path, sends cmd (one line: the one-shot form), copies the answer to out.
 * Returns 0 or -errno. */
int ctl_request(const char *path, const char *cmd, FILE *out);

#endif

/*
 * Control socket of gregw (see ctl.h): a listener and a small table of non-blocking client
 * connections that the main loop polls with its other fds.
 */
#include "ctl.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "clock.h"
#include "fd.h"

static int make_addr(const char *path, struct sockaddr_un *sun)
{
	memset(sun, 0, sizeof(*sun));
	sun->sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sun->sun_path))
		return -ENAMETOOLONG;
	snprintf(sun->sun_path, sizeof(sun->sun_path), "%s", path);
	return 0;
}

/*
 * Whether user may do what need asks (search, or write and search) in the directory of st,
 * by its mode, as the kernel checks it for a process without capabilities or supplementary
 * groups (privs_drop leaves neither; ACLs are not looked at).
 */
static bool allowed_to(const struct stat *st, const struct privs_user *u, bool write)
{
	mode_t need;

	if (st->st_uid == u->uid)
		need = write ? S_IWUSR | S_IXUSR : S_IXUSR;
	else if (st->st_gid == u->gid)
		need = write ? S_IWGRP | S_IXGRP : S_IXGRP;
	else
		need = write ? S_IWOTH | S_IXOTH : S_IXOTH;
	return (st->st_mode & need) == need;
}

/*
 * The socket's directories, as mkdir -p makes them (0755), the last one, when it is made
 * here for an owner, 0700 and the owner's. With an owner, -EACCES unless the owner can
 * reach the last one and remove the socket from it at exit.
 */
static int make_dirs(const char *path, const struct privs_user *owner)
{
	char dir[sizeof(((struct sockaddr_un *)0)->sun_path)];
	struct stat st;
	char *slash;

	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else if (slash == dir)
		slash[1] = '\0';
	else
		*slash = '\0';
	for (char *p = strchr(dir + 1, '/');; p = strchr(p + 1, '/')) {
		bool last = !p;
		int rc;

		if (p)
			*p = '\0';
		rc = mkdir(dir, last && owner->set ? 0700 : 0755);
		if (rc < 0 && errno != EEXIST)
			return -errno;
		if (rc == 0 && last && owner->set && lchown(dir, owner->uid, owner->gid) < 0)
			return -errno;
		if (owner->set && (stat(dir, &st) < 0 || !allowed_to(&st, owner, last)))
			return -EACCES;
		if (last)
			return 0;
		*p = '/';
	}
}

/*
 * Someone's file at the socket's path: 0 once a stale socket is gone, -EADDRINUSE if it
 * answers (or its queue is full: alive too), -EEXIST if it is not a socket at all.
 */
static int clear_stale(const char *path, const struct sockaddr_un *sun)
{
	struct stat st;
	int probe, rc;

	if (lstat(path, &st) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISSOCK(st.st_mode))
		return -EEXIST;
	probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (probe < 0)
		return -errno;
	rc = connect(probe, (const struct sockaddr *)sun, sizeof(*sun)) == 0 ? 0 : -errno;
	close(probe);
	if (rc == 0 || rc == -EAGAIN)
		return -EADDRINUSE;
	if (rc != -ECONNREFUSED)
		return rc;
	return unlink(path) < 0 && errno != ENOENT ? -errno : 0;
}

int ctl_listen(struct ctl_server *s, const char *path, const struct privs_user *owner)
{
	struct sockaddr_un sun;
	mode_t old;
	int fd, rc;

	memset(s, 0, sizeof(*s));
	s->fd = -1;
	for (unsigned i = 0; i < CTL_CONNS; i++)
		s->conns[i].fd = -1;
	rc = make_addr(path, &sun);
	if (!rc)
		rc = make_dirs(path, owner);
	if (!rc)
		rc = clear_stale(path, &sun);
	if (rc)
		return rc;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	/* bind creates the file with 0777 less the umask: the stats hold the whole
	 * configuration, so only the owner may connect, whatever the umask was. No other
	 * thread creates files now. (No chmod after: in a directory the owner may write, the
	 * file could be a symbolic link by then, which chmod would follow.) */
	old = umask(0177);
	rc = bind(fd, (struct sockaddr *)&sun, sizeof(sun));
	umask(old);
	if (rc < 0)
		return fd_close_err(fd);
	if ((owner->set && lchown(path, owner->uid, owner->gid) < 0) ||
	    listen(fd, CTL_BACKLOG) < 0) {
		rc = fd_close_err(fd);
		unlink(path);
		return rc;
	}
	s->fd = fd;
	return 0;
}

char ctl_later_mark;

/* The reply to a first line "keep", in the form of the kept connection's replies. */
static const char KEEP_REPLY[] = "{\"keep\":true}\n";

static void drop(struct ctl_conn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	free(c->out);
	*c = (struct ctl_conn){ .fd = -1 };
}

void ctl_close(struct ctl_server *s)
{
	for (unsigned i = 0; i < CTL_CONNS; i++)
		drop(&s->conns[i]);
	if (s->fd >= 0)
		close(s->fd);
	s->fd = -1;
}

void ctl_pollfds(const struct ctl_server *s, struct pollfd *pfd, uint64_t now_ns, int *timeout_ms)
{
	pfd[0] = (struct pollfd){ .fd = s->fd, .events = POLLIN };
	for (unsigned i = 0; i < CTL_CONNS; i++) {
		const struct ctl_conn *c = &s->conns[i];
		uint64_t left;
		int ms;

		/* A connection waiting for its reply, with nothing to send, is polled for its
		 * hang-up alone; one with replies to send reads nothing more meanwhile. */
		pfd[1 + i] = (struct pollfd){ .fd = c->fd, .events = POLLIN | POLLRDHUP };
		if (c->out)
			pfd[1 + i].events = POLLOUT;
		else if (c->later)
			pfd[1 + i].events = 0;
		if (c->fd < 0)
			continue;
		left = c->deadline_ns > now_ns ? c->deadline_ns - now_ns : 0;
		ms = (int)((left + NSEC_PER_MSEC - 1) / NSEC_PER_MSEC);
		if (c->ready)
			ms = 0;
		if (*timeout_ms < 0 || ms < *timeout_ms)
			*timeout_ms = ms;
	}
}

/* Whether a whole line waits in c's input (or the rest of it after the client's end). */
static bool held(const struct ctl_conn *c)
{
	return memchr(c->in, '\n', c->in_len) || c->in_len == sizeof(c->in) ||
	       (c->eof && c->in_len);
}

/*
 * Sends what the socket takes of out. 1: all of it is out and the connection stays (a kept
 * one, its deadline now its next line's); 0: the rest when poll says POLLOUT (or never: the
 * deadline); -1: the connection is closed (that was its last reply, or the client is gone).
 */
static int flush_out(struct ctl_conn *c, uint64_t now_ns)
{
	while (c->out_off < c->out_len) {
		ssize_t n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off,
				 MSG_DONTWAIT | MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 0;
		if (n <= 0) {
			drop(c);
			return -1;
		}
		c->out_off += (size_t)n;
	}
	if (c->last && !c->later) {
		drop(c);
		return -1;
	}
	free(c->out);
	c->out = NULL;
	c->out_len = c->out_off = 0;
	if (!c->later)
		c->deadline_ns =
			now_ns + (uint64_t)(c->in_len ? CTL_CMD_MS : CTL_IDLE_MS) * NSEC_PER_MSEC;
	return 1;
}

/* Puts reply r of len bytes (malloc'd) behind the replies c has to send. false: out of
 * memory, the connection closed (a reply cannot be left out of the order). */
static bool gather(struct ctl_conn *c, char *r, size_t len)
{
	char *all;

	if (!c->out) {
		c->out = r;
		c->out_len = len;
		c->out_off = 0;
		return true;
	}
	all = realloc(c->out, c->out_len + len);
	if (!all) {
		free(r);
		drop(c);
		return false;
	}
	memcpy(all + c->out_len, r, len);
	free(r);
	c->out = all;
	c->out_len += len;
	return true;
}

/*
 * The first line c holds: 1, its length (without its newline) in *len and the bytes it
 * takes of in (with it) in *used; 0 when none is whole yet (the socket has no more now);
 * -errno when the connection failed. At the client's end of writing, what is held is the
 * last line (before any line, the one-shot command, even empty); a full buffer without a
 * newline is a line too long, and the last: where the next line begins is unknown. *dry:
 * the socket was found empty in this pass, so it is not read again until poll says: a read
 * found nothing, or (short) took less than it had room for, a newline among it (a stream
 * socket's read takes all it has up to the room given; short is false where the client's
 * end of writing may follow, which only another read would find).
 */
static int next_line(struct ctl_conn *c, uint64_t now_ns, bool short_read, size_t *len,
		     size_t *used, bool *dry)
{
	for (;;) {
		char *nl = memchr(c->in, '\n', c->in_len);
		ssize_t n;

		if (nl) {
			*len = (size_t)(nl - c->in);
			*used = *len + 1;
			return 1;
		}
		if (c->in_len == sizeof(c->in) || c->eof) {
			c->last = true;
			if (c->eof && !c->in_len && c->started)
				return 0;
			*len = *used = c->in_len;
			return 1;
		}
		if (*dry)
			return 0;
		n = recv(c->fd, c->in + c->in_len, sizeof(c->in) - c->in_len, MSG_DONTWAIT);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			*dry = true;
			return 0;
		}
		if (n < 0)
			return -errno;
		if (n == 0) {
			c->eof = true;
			continue;
		}
		*dry = short_read && (size_t)n < sizeof(c->in) - c->in_len &&
		       memchr(c->in + c->in_len, '\n', (size_t)n);
		/* A kept connection's next line has begun: it has CTL_CMD_MS to end, as a
		 * first line has from the connect. */
		if (c->started && !c->in_len && !c->later && !c->out)
			c->deadline_ns = now_ns + (uint64_t)CTL_CMD_MS * NSEC_PER_MSEC;
		c->in_len += (size_t)n;
	}
}

/*
 * Answers the line of len bytes at the start of c's input (used bytes with its newline): its
 * reply gathered in out, or awaited (later). The first line "keep" keeps the connection;
 * any other first line is the one-shot's command. false when the connection is closed.
 */
static bool answer(struct ctl_server *s, struct ctl_conn *c, size_t len, size_t used,
		   uint64_t now_ns, ctl_reply_fn *fn, void *arg)
{
	size_t rlen = 0;
	char *r;

	while (len && c->in[len - 1] == '\r')
		len--;
	c->seq = ++s->seq;
	c->deadline_ns = now_ns + (uint64_t)CTL_REPLY_MS * NSEC_PER_MSEC;
	if (!c->started && len == 4 && memcmp(c->in, "keep", 4) == 0) {
		c->keep = true;
		rlen = sizeof(KEEP_REPLY) - 1;
		r = malloc(rlen);
		if (r)
			memcpy(r, KEEP_REPLY, rlen);
	} else {
		c->last = c->last || !c->keep;
		r = fn(arg, c->seq, c->in, len, c->keep, &rlen);
	}
	c->started = true;
	c->in_len -= used;
	memmove(c->in, c->in + used, c->in_len);
	if (r == CTL_LATER) {
		c->later = true;
		return true;
	}
	if (!r) {
		drop(c);
		return false;
	}
	return gather(c, r, rlen);
}

/*
 * What c is ready for: its lines answered in order, one command at a time (none is read
 * while a reply is awaited, nor while replies of an earlier pass wait to be sent), those
 * answered at once gathered (up to CTL_GATHER_MAX bytes) and sent together; at most
 * CTL_LINES_PASS lines a pass (then ready). short_read: poll said nothing of the client's
 * end of writing (next_line).
 */
static void step(struct ctl_server *s, struct ctl_conn *c, uint64_t now_ns, bool short_read,
		 ctl_reply_fn *fn, void *arg)
{
	bool gathering = false, dry = false;
	unsigned lines = 0;

	c->ready = false;
	for (;;) {
		size_t len, used;
		int rc;

		if (!c->later && !c->last && lines < CTL_LINES_PASS &&
		    (!c->out || (gathering && c->out_len < CTL_GATHER_MAX))) {
			rc = next_line(c, now_ns, short_read, &len, &used, &dry);
			if (rc < 0) {
				drop(c);
				return;
			}
			if (rc > 0) {
				lines++;
				if (!answer(s, c, len, used, now_ns, fn, arg))
					return;
				gathering = true;
				continue;
			}
		}
		if (!c->out)
			break;
		if (flush_out(c, now_ns) <= 0)
			return;
		gathering = false;
	}
	if (c->last && !c->later) /* the client ended with nothing more to answer */
		drop(c);
	else if (!c->later && lines == CTL_LINES_PASS && held(c))
		c->ready = true;
}

/* A slot for a new connection: a free one, else that of the lowest seq, which is closed. */
static struct ctl_conn *slot(struct ctl_server *s)
{
	struct ctl_conn *oldest = NULL;

	for (unsigned i = 0; i < CTL_CONNS; i++) {
		struct ctl_conn *c = &s->conns[i];

		if (c->fd < 0)
			return c;
		if (!oldest || c->seq < oldest->seq)
			oldest = c;
	}
	drop(oldest);
	return oldest;
}

void ctl_handle(struct ctl_server *s, const struct pollfd *pfd, uint64_t now_ns, ctl_reply_fn *fn,
		void *arg)
{
	for (unsigned i = 0; i < CTL_CONNS; i++) {
		struct ctl_conn *c = &s->conns[i];
		short ev = pfd[1 + i].revents;

		if (c->fd < 0 || pfd[1 + i].fd != c->fd)
			continue;
		if (c->later && !c->out) {
			if (ev & (POLLHUP | POLLERR))
				drop(c); /* gone before its reply: the command still takes effect */
		} else if ((ev & (POLLIN | POLLOUT | POLLHUP | POLLERR)) || c->ready) {
			step(s, c, now_ns, !(ev & (POLLRDHUP | POLLHUP | POLLERR)), fn, arg);
		}
		if (c->fd >= 0 && now_ns >= c->deadline_ns)
			drop(c); /* slow, idle, or not reading its reply */
	}
	if (!(pfd[0].revents & POLLIN))
		return;
	for (unsigned k = 0; k < CTL_ACCEPT_BATCH; k++) {
		int fd = accept4(s->fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		struct ctl_conn *c;

		if (fd < 0)
			return; /* EAGAIN: nobody else waits; anything else: next time */
		c = slot(s);
		c->fd = fd;
		c->seq = ++s->seq;
		c->deadline_ns = now_ns + (uint64_t)CTL_CMD_MS * NSEC_PER_MSEC;
		/* A client usually sends its line with its connect: answer it now. */
		step(s, c, now_ns, false, fn, arg);
	}
}

void ctl_reply_later(struct ctl_server *s, uint64_t id, char *out, size_t len, uint64_t now_ns)
{
	for (unsigned i = 0; i < CTL_CONNS; i++) {
		struct ctl_conn *c = &s->conns[i];

		if (c->fd < 0 || !c->later || c->seq != id)
			continue;
		c->later = false;
		if (!out) {
			drop(c);
			return;
		}
		if (gather(c, out, len) && flush_out(c, now_ns) > 0)
			c->ready = held(c); /* the next line at the next pass (not from within
					     * the caller's round of replies) */
		return;
	}
	free(out);
}

bool ctl_line(const struct ctl_server *s, uint64_t id)
{
	for (unsigned i = 0; i < CTL_CONNS; i++) {
		const struct ctl_conn *c = &s->conns[i];

		if (c->fd >= 0 && c->seq == id)
			return c->keep;
	}
	return false;
}

char *ctl_quote(const char *cmd, size_t len, char *buf, size_t size)
{
	size_t used = 0;

	for (size_t i = 0; i < len; i++) {
		unsigned char b = (unsigned char)cmd[i];
		char one[5];
		size_t n;

		if (b == '\\')
			n = (size_t)snprintf(one, sizeof(one), "\\\\");
		else if (b >= 0x20 && b <= 0x7e)
			n = (size_t)snprintf(one, sizeof(one), "%c", b);
		else
			n = (size_t)snprintf(one, sizeof(one), "\\x%02x", b);
		if (used + n >= size)
			break;
		memcpy(buf + used, one, n);
		used += n;
	}
	buf[used] = '\0';
	return buf;
}

int ctl_request(const char *path, const char *cmd, FILE *out)
{
	struct sockaddr_un sun;
	char buf[65536];
	ssize_t n;
	int fd, rc;

	rc = make_addr(path, &sun);
	if (rc)
		return rc;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0 || dprintf(fd, "%s\n", cmd) < 0)
		return fd_close_err(fd);
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		fwrite(buf, 1, (size_t)n, out);
	rc = n < 0 ? -errno : 0;
	close(fd);
	return rc;
}

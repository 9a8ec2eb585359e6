/*
 * Unit tests for gateway/ctl.c, the control socket's connections, driven pass by pass as
 * gregw's main loop drives them, on a clock of the test's own: the one-shot form (a line,
 * a document, closed); a kept connection ("keep"): many commands in order, a reply of one
 * line each, a bad line answered and the connection still used, a reply given later before
 * the next line is read, a line too long or the client's end closing it; the deadlines (idle,
 * a line begun, the one-shot's), the lines answered in one pass, no line read while replies
 * wait to be sent, and the eviction of the connection whose last command came first.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "check.h"
#include "clock.h"
#include "ctl.h"

enum { BIG_REPLY = 1 << 20, LOG_MAX = 256 };

/* What the reply function was asked, in order. */
struct calls {
	unsigned n;
	char cmd[LOG_MAX][CTL_CMD_MAX + 1];
	bool line[LOG_MAX];
	uint64_t id[LOG_MAX];
};

static struct calls calls;

static char *dup_reply(const char *text, size_t *out_len)
{
	char *r = strdup(text);

	*out_len = r ? strlen(r) : 0;
	return r;
}

/*
 * The fake gregw: "later" answers later, "null" closes, "big" is a reply of BIG_REPLY bytes,
 * "bad" an error; anything else is echoed as {"cmd":"..."} (one line), or as an indented
 * document of three lines when line is false.
 */
static char *reply(void *arg, uint64_t id, const char *cmd, size_t len, bool line, size_t *out_len)
{
	char text[CTL_CMD_MAX + 64];

	(void)arg;
	if (calls.n < LOG_MAX) {
		memcpy(calls.cmd[calls.n], cmd, len);
		calls.cmd[calls.n][len] = '\0';
		calls.line[calls.n] = line;
		calls.id[calls.n] = id;
		calls.n++;
	}
	if (len == 5 && memcmp(cmd, "later", 5) == 0)
		return CTL_LATER;
	if (len == 4 && memcmp(cmd, "null", 4) == 0)
		return NULL;
	if (len == 3 && memcmp(cmd, "big", 3) == 0) {
		char *r = malloc(BIG_REPLY);

		if (!r)
			return NULL;
		memset(r, 'x', BIG_REPLY - 1);
		r[BIG_REPLY - 1] = '\n';
		*out_len = BIG_REPLY;
		return r;
	}
	if (len == 3 && memcmp(cmd, "bad", 3) == 0)
		return dup_reply("{\"error\":\"unknown command 'bad'\"}\n", out_len);
	if (len > 64)
		snprintf(text, sizeof(text), "{\"cmd\":\"(%zu bytes)\"}\n", len);
	else if (line)
		snprintf(text, sizeof(text), "{\"cmd\":\"%.*s\"}\n", (int)len, cmd);
	else
		snprintf(text, sizeof(text), "{\n  \"cmd\": \"%.*s\"\n}\n", (int)len, cmd);
	return dup_reply(text, out_len);
}

static char path[64]; /* within sun_path (108 bytes) */
static uint64_t now = 1000 * (uint64_t)NSEC_PER_SEC;

/* One pass of the main loop at the test's now; *timeout_ms (if asked) is what poll got. */
static void pass(struct ctl_server *s, int *timeout_ms)
{
	struct pollfd pfd[CTL_POLLFDS];
	int timeout = -1;

	ctl_pollfds(s, pfd, now, &timeout);
	if (timeout_ms)
		*timeout_ms = timeout;
	/* A Unix socket's data and connects are queued by the time send and connect return:
	 * what the test sent is ready now. */
	CHECK(poll(pfd, CTL_POLLFDS, 0) >= 0);
	ctl_handle(s, pfd, now, reply, NULL);
}

static int client(const char *first)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", path);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0) {
		perror("test_ctl: connect");
		exit(1);
	}
	if (first && send(fd, first, strlen(first), MSG_NOSIGNAL) != (ssize_t)strlen(first)) {
		perror("test_ctl: send");
		exit(1);
	}
	return fd;
}

static void say(int fd, const char *text)
{
	CHECK(send(fd, text, strlen(text), MSG_NOSIGNAL) == (ssize_t)strlen(text));
}

/* What the client has been sent so far (NUL-terminated, cut to size), without waiting;
 * *eof: whether the server has closed the connection. */
static size_t got(int fd, char *buf, size_t size, bool *eof)
{
	size_t n = 0;

	*eof = false;
	for (;;) {
		ssize_t r = recv(fd, buf + n, size - 1 - n, MSG_DONTWAIT);

		if (r == 0 || (r < 0 && errno == ECONNRESET)) {
			*eof = true;
			break;
		}
		if (r < 0 || n + (size_t)r == size - 1) {
			n += r > 0 ? (size_t)r : 0;
			break;
		}
		n += (size_t)r;
	}
	buf[n] = '\0';
	return n;
}

static void expect(int fd, const char *want, bool want_eof, const char *row)
{
	char buf[4096];
	bool eof;

	got(fd, buf, sizeof(buf), &eof);
	CHECK_STR(buf, want);
	CHECK_ROW(eof == want_eof, row);
}

static void test_one_shot(struct ctl_server *s)
{
	int fd = client("stats\n");

	calls.n = 0;
	pass(s, NULL);
	expect(fd, "{\n  \"cmd\": \"stats\"\n}\n", true, "one-shot: a document, then closed");
	CHECK_INT(calls.n, 1);
	CHECK(!calls.line[0]);
	close(fd);

	/* Without a newline, at the client's end of writing; lines after the first unread. */
	fd = client("flows");
	CHECK(shutdown(fd, SHUT_WR) == 0);
	pass(s, NULL);
	expect(fd, "{\n  \"cmd\": \"flows\"\n}\n", true, "one-shot at the end of writing");
	close(fd);
	calls.n = 0;
	fd = client("stats\nkeep\nA\n");
	pass(s, NULL);
	expect(fd, "{\n  \"cmd\": \"stats\"\n}\n", true, "one-shot: what follows its line");
	CHECK_INT(calls.n, 1);
	close(fd);

	/* The first line "keep" alone keeps: another word is a command. */
	fd = client("keeps\n");
	pass(s, NULL);
	expect(fd, "{\n  \"cmd\": \"keeps\"\n}\n", true, "keeps is not keep");
	close(fd);
}

static void test_kept(struct ctl_server *s)
{
	int fd = client("keep\nA\nB\r\nbad\n\nC\n");
	char longline[1101];

	calls.n = 0;
	pass(s, NULL);
	expect(fd,
	       "{\"keep\":true}\n{\"cmd\":\"A\"}\n{\"cmd\":\"B\"}\n"
	       "{\"error\":\"unknown command 'bad'\"}\n{\"cmd\":\"\"}\n{\"cmd\":\"C\"}\n",
	       false, "kept: replies in order, a bad line among them, still open");
	CHECK_INT(calls.n, 5);
	CHECK(calls.line[0] && calls.line[4]);
	CHECK(calls.id[0] < calls.id[1] && calls.id[3] < calls.id[4]);
	say(fd, "D\nE");
	pass(s, NULL);
	expect(fd, "{\"cmd\":\"D\"}\n", false, "a line cut in two");
	say(fd, "F\n");
	pass(s, NULL);
	expect(fd, "{\"cmd\":\"EF\"}\n", false, "its second half");

	/* At the client's end of writing: its last line, even without a newline, then closed. */
	say(fd, "G\nH");
	CHECK(shutdown(fd, SHUT_WR) == 0);
	pass(s, NULL);
	expect(fd, "{\"cmd\":\"G\"}\n{\"cmd\":\"H\"}\n", true, "the client's end");
	close(fd);
	fd = client("keep\n");
	CHECK(shutdown(fd, SHUT_WR) == 0);
	pass(s, NULL);
	expect(fd, "{\"keep\":true}\n", true, "an end with nothing more");
	close(fd);

	/* A line too long: its reply, then closed (where the next line begins is unknown). */
	fd = client("keep\nA\n");
	pass(s, NULL);
	expect(fd, "{\"keep\":true}\n{\"cmd\":\"A\"}\n", false, "before the line too long");
	memset(longline, 'q', sizeof(longline) - 1);
	longline[sizeof(longline) - 1] = '\0';
	say(fd, longline);
	calls.n = 0;
	pass(s, NULL);
	pass(s, NULL);
	expect(fd, "{\"cmd\":\"(1024 bytes)\"}\n", true, "a line too long");
	CHECK_INT(calls.n, 1);
	close(fd);

	/* The reply function's NULL (out of memory) closes a kept connection, replies and all. */
	fd = client("keep\nA\nnull\nB\n");
	pass(s, NULL);
	expect(fd, "", true, "NULL closes");
	close(fd);
}

static void test_later(struct ctl_server *s)
{
	int fd = client("keep\nA\nlater\nB\nC\n"), timeout;
	uint64_t id;

	calls.n = 0;
	pass(s, NULL);
	expect(fd, "{\"keep\":true}\n{\"cmd\":\"A\"}\n", false, "up to the reply given later");
	CHECK_INT(calls.n, 2);
	id = calls.id[1];
	CHECK(ctl_line(s, id));
	pass(s, &timeout);
	CHECK_INT(calls.n, 2); /* nothing read while the reply waits */
	ctl_reply_later(s, id, strdup("{\"late\":1}\n"), 11, now);
	expect(fd, "{\"late\":1}\n", false, "the reply given later");
	CHECK_INT(calls.n, 2); /* the next line at the next pass, */
	pass(s, &timeout);
	CHECK_INT(timeout, 0); /* which comes at once */
	pass(s, NULL);
	expect(fd, "{\"cmd\":\"B\"}\n{\"cmd\":\"C\"}\n", false, "the lines after it, in order");

	/* A reply later to a client gone: freed (LeakSanitizer), the slot free again. */
	say(fd, "later\n");
	pass(s, NULL);
	id = calls.id[calls.n - 1];
	close(fd);
	pass(s, NULL);
	CHECK(!ctl_line(s, id));
	ctl_reply_later(s, id, strdup("{}\n"), 3, now);

	/* One-shot: the reply later is a document, and closes. */
	fd = client("later\n");
	pass(s, NULL);
	id = calls.id[calls.n - 1];
	CHECK(!ctl_line(s, id));
	ctl_reply_later(s, id, strdup("{\n}\n"), 4, now);
	expect(fd, "{\n}\n", true, "a one-shot's reply later");
	close(fd);
}

static void test_limits(struct ctl_server *s)
{
	char lines[2 * 100 + 8] = "keep\n", buf[4096];
	int fd, timeout, fds[CTL_CONNS + 1];
	unsigned before;
	size_t big = 0;
	bool eof;

	/* Lines answered in one pass: CTL_LINES_PASS, the rest at the next, which comes at once. */
	for (int i = 0; i < 100; i++)
		strcat(lines, "A\n");
	fd = client(lines);
	calls.n = 0;
	pass(s, &timeout);
	CHECK_INT(calls.n, CTL_LINES_PASS - 1); /* keep is a line too */
	pass(s, &timeout);
	CHECK_INT(timeout, 0);
	CHECK_INT(calls.n, 100);
	pass(s, &timeout);
	CHECK(timeout != 0);
	got(fd, buf, sizeof(buf), &eof);
	CHECK(!eof);
	CHECK_INT(strlen(buf), strlen("{\"keep\":true}\n") + 100 * strlen("{\"cmd\":\"A\"}\n"));

	/* No line read while replies wait to be sent: a reply the client does not read yet. */
	say(fd, "big\nB\n");
	calls.n = 0;
	pass(s, NULL);
	pass(s, NULL);
	CHECK_INT(calls.n, 1);
	for (int k = 0; k < 100000 && big < BIG_REPLY; k++) {
		char chunk[65536];
		size_t want = BIG_REPLY - big < sizeof(chunk) ? BIG_REPLY - big : sizeof(chunk);
		ssize_t r;

		pass(s, NULL);
		r = recv(fd, chunk, want, MSG_DONTWAIT);
		if (r == 0 || (r < 0 && errno != EAGAIN))
			break;
		big += r > 0 ? (size_t)r : 0;
	}
	CHECK_U64(big, BIG_REPLY);
	pass(s, NULL);
	expect(fd, "{\"cmd\":\"B\"}\n", false, "the line after a reply read at last");
	CHECK_INT(calls.n, 2);
	close(fd);
	pass(s, NULL);

	/* Deadlines: a kept connection idle CTL_IDLE_MS after its reply; a line begun has
	 * CTL_CMD_MS; a one-shot's line CTL_CMD_MS from its connect. */
	fd = client("keep\n");
	pass(s, NULL);
	expect(fd, "{\"keep\":true}\n", false, "kept");
	now += (uint64_t)CTL_IDLE_MS * NSEC_PER_MSEC - 1;
	pass(s, NULL);
	expect(fd, "", false, "idle, within CTL_IDLE_MS");
	now += 1;
	pass(s, NULL);
	expect(fd, "", true, "idle CTL_IDLE_MS: closed");
	close(fd);
	fd = client("keep\n");
	pass(s, NULL);
	expect(fd, "{\"keep\":true}\n", false, "kept again");
	now += NSEC_PER_SEC;
	say(fd, "sta");
	pass(s, NULL);
	now += (uint64_t)CTL_CMD_MS * NSEC_PER_MSEC - 1;
	pass(s, NULL);
	expect(fd, "", false, "a line begun, within CTL_CMD_MS");
	now += 1;
	pass(s, NULL);
	expect(fd, "", true, "a line begun CTL_CMD_MS ago: closed");
	close(fd);
	fd = client("sta");
	pass(s, NULL);
	now += (uint64_t)CTL_CMD_MS * NSEC_PER_MSEC;
	pass(s, NULL);
	expect(fd, "", true, "a one-shot's line: CTL_CMD_MS from its connect");
	close(fd);
	pass(s, NULL);

	/* CTL_CONNS at once; a new one evicts the connection whose last command came first. */
	for (int i = 0; i < CTL_CONNS; i++) {
		fds[i] = client("keep\n");
		pass(s, NULL);
		expect(fds[i], "{\"keep\":true}\n", false, "one of the connections");
	}
	say(fds[0], "A\n");
	pass(s, NULL);
	expect(fds[0], "{\"cmd\":\"A\"}\n", false, "the first, used again");
	before = calls.n;
	fds[CTL_CONNS] = client("keep\n");
	pass(s, NULL);
	expect(fds[CTL_CONNS], "{\"keep\":true}\n", false, "one more");
	expect(fds[1], "", true, "the one least recently used: evicted");
	say(fds[0], "B\n");
	pass(s, NULL);
	expect(fds[0], "{\"cmd\":\"B\"}\n", false, "the first, kept");
	CHECK_INT(calls.n, before + 1);
	for (int i = 0; i <= CTL_CONNS; i++)
		close(fds[i]);
	pass(s, NULL);
}

int main(void)
{
	struct privs_user owner = { 0 };
	struct ctl_server s;
	char dir[] = "/tmp/test_ctl.XXXXXX";
	int rc;

	if (!mkdtemp(dir)) {
		perror("test_ctl: mkdtemp");
		return 1;
	}
	snprintf(path, sizeof(path), "%s/ctl.sock", dir);
	rc = ctl_listen(&s, path, &owner);
	CHECK_INT(rc, 0);
	if (rc == 0) {
		test_one_shot(&s);
		test_kept(&s);
		test_later(&s);
		test_limits(&s);
		ctl_close(&s);
	}
	unlink(path);
	rmdir(dir);
	return check_done("test_ctl");
}

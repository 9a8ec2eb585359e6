/*
 * Unit tests for common/line_error.c: line_error_set returns the code it is given and cuts a
 * long message as vsnprintf does, line_error_first keeps the first refusal only, and
 * line_error_text gives the "FILE:LINE: MESSAGE" and "FILE: MESSAGE" lines the readers print.
 */
#include <errno.h>
#include <string.h>

#include "check.h"
#include "line_error.h"

static void test_set(void)
{
	struct line_error e = { 0 };
	char want[LINE_ERROR_MSG_MAX];

	CHECK_INT(line_error_set(&e, -EINVAL, 3, "bad value '%s' for %s", "x", "mtu"), -EINVAL);
	CHECK_INT(e.line, 3);
	CHECK_STR(e.msg, "bad value 'x' for mtu");
	CHECK_INT(line_error_set(&e, -EEXIST, 0, "duplicate tunnel '%s'", "a"), -EEXIST);
	CHECK_INT(e.line, 0);
	CHECK_STR(e.msg, "duplicate tunnel 'a'");
	/* A message past the buffer is cut, NUL-ended, never overrun. */
	memset(want, 'v', sizeof(want) - 1);
	want[sizeof(want) - 1] = '\0';
	CHECK_INT(line_error_set(&e, -EINVAL, 1, "%s%s", want, "more"), -EINVAL);
	CHECK_INT(strlen(e.msg), LINE_ERROR_MSG_MAX - 1);
	CHECK_STR(e.msg, want);
}

static void test_first(void)
{
	struct line_error e = { 0 };
	int rc = 0;

	CHECK_INT(line_error_first(&e, &rc, -E2BIG, 4, "too many tunnels: at most %d", 2), 0);
	CHECK_INT(rc, -E2BIG);
	CHECK_INT(line_error_first(&e, &rc, -EINVAL, 5, "unknown key '%s'", "k"), 0);
	CHECK_INT(rc, -E2BIG);
	CHECK_INT(e.line, 4);
	CHECK_STR(e.msg, "too many tunnels: at most 2");
	/* Cleared, the next one is kept (libinih's own earlier line replacing ours). */
	rc = 0;
	line_error_first(&e, &rc, -EINVAL, 2, "expected 'key = value' or [tunnel NAME]");
	CHECK_INT(rc, -EINVAL);
	CHECK_INT(e.line, 2);
	CHECK_STR(e.msg, "expected 'key = value' or [tunnel NAME]");
}

static void test_text(void)
{
	struct line_error e = { 0 };
	char line[64], small[12];

	line_error_set(&e, -EINVAL, 7, "tunnel 'a' has no peer");
	CHECK_STR(line_error_text("gwa.tunnels", &e, line, sizeof(line)),
		  "gwa.tunnels:7: tunnel 'a' has no peer");
	line_error_set(&e, -EINVAL, 0, "not a regular file");
	CHECK_STR(line_error_text("ras.topo", &e, line, sizeof(line)),
		  "ras.topo: not a regular file");
	CHECK_STR(line_error_text("ras.topo", &e, small, sizeof(small)), "ras.topo: n");
}

int main(void)
{
	test_set();
	test_first();
	test_text();
	return check_done("test_line_error");
}

/*
 * libinih's lines from memory (see iniline.h).
 */
#include "iniline.h"

#include <stdio.h>
#include <string.h>

/* "[name]" with anything but a comment after it refused; the name trimmed, in place. */
static enum iniline_kind section(char *str, char *why, size_t size)
{
	char *close = strchr(str, ']'), *rest, *name = str + 1;
	size_t n;

	if (!close) {
		snprintf(why, size, "missing ']' in section header '%s'", str);
		return INILINE_BAD;
	}
	for (rest = close + 1; *rest == ' ' || *rest == '\t' || *rest == '\r'; rest++)
		;
	if (*rest && *rest != ';' && *rest != '#') {
		snprintf(why, size, "text after section header: '%s'", rest);
		return INILINE_BAD;
	}
	*close = '\0';
	while (*name == ' ' || *name == '\t')
		name++;
	for (char *e = close; e > name && (e[-1] == ' ' || e[-1] == '\t'); e--)
		e[-1] = '\0';
	n = strlen(name);
	memmove(str, name, n + 1);
	return INILINE_SECTION;
}

enum iniline_kind iniline_next(struct iniline *r, char *str, int num, char *why, size_t size)
{
	const char *nl, *s;
	size_t n, key;

	if (r->p >= r->end)
		return INILINE_END;
	nl = memchr(r->p, '\n', (size_t)(r->end - r->p));
	n = nl ? (size_t)(nl - r->p) : (size_t)(r->end - r->p);
	s = r->p;
	r->p += n + (nl ? 1 : 0);
	r->line++;
	if (memchr(s, '\0', n)) {
		snprintf(why, size, "NUL byte in line: this is not a text file");
		return INILINE_BAD;
	}
	/* A UTF-8 byte order mark, as some editors write, is not part of the first line. */
	if (r->line == 1 && n >= 3 && memcmp(s, "\xef\xbb\xbf", 3) == 0) {
		s += 3;
		n -= 3;
	}
	/* Blanks in front go, so that an indented key is a key, not a continuation. */
	while (n && (*s == ' ' || *s == '\t')) {
		s++;
		n--;
	}
	if (n + 2 > (size_t)num) {
		snprintf(why, size, "line too long: at most %d characters", num - 2);
		return INILINE_BAD;
	}
	memcpy(str, s, n);
	str[n] = '\0';
	if (str[0] == '[')
		return section(str, why, size);
	key = strcspn(str, "=:");
	while (key && (str[key - 1] == ' ' || str[key - 1] == '\t'))
		key--;
	if (str[0] != ';' && str[0] != '#' && key > INILINE_KEY_MAX) {
		snprintf(why, size, "key too long: at most %d characters", INILINE_KEY_MAX);
		return INILINE_BAD;
	}
	str[n] = '\n';
	str[n + 1] = '\0';
	return INILINE_TEXT;
}

char *iniline_section_mark(char *str, int num)
{
	snprintf(str, (size_t)num, "[s]\n");
	return str;
}

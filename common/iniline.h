/*
 * libinih's lines from memory, for the parsers that take their section headers themselves
 * (tunbed-topo's topology file, gregw's tunnel file): one line at a time, counted, with the
 * refusals both need: a NUL byte (libinih would end the line there without a word), a line
 * longer than libinih's buffer (it would parse the rest as a line of its own), a key longer
 * than its key buffer (it would cut it), and a malformed section header. Pure.
 */
#ifndef TUNBED_INILINE_H
#define TUNBED_INILINE_H

#include <stddef.h>

/* What is left of the text, and the number of the line read last. */
struct iniline {
	const char *p, *end;
	int line;
};

enum iniline_kind {
	INILINE_END,	 /* no more lines */
	INILINE_TEXT,	 /* str holds the line for libinih (key, comment or blank), blanks in
			  * front removed, with its newline */
	INILINE_SECTION, /* str holds a section header's text, brackets and blanks removed */
	INILINE_BAD,	 /* refused: why holds one line (the line number is r->line) */
};

enum { INILINE_KEY_MAX = 49 }; /* libinih's key buffer less its NUL; longer keys it cuts */

/*
 * Reads the next line of r into str, libinih's buffer of num bytes (as its reader callback
 * gets them). A UTF-8 byte order mark before the first line is skipped. Returns the kind of
 * line; for INILINE_BAD, why (size bytes) says what is wrong.
 */
enum iniline_kind iniline_next(struct iniline *r, char *str, int num, char *why, size_t size);

/* Writes a section header libinih takes into str (num bytes), for the caller's reader to
 * return once it has taken the header itself; returns str. */
char *iniline_section_mark(char *str, int num);

#endif

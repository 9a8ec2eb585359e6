/*
 * The wire audit's report: one JSON document (docs/wire.md has the schema) built from the
 * audit, and the text for people rendered from that same document, so the two agree.
 */
#ifndef TUNBED_WIRE_REPORT_H
#define TUNBED_WIRE_REPORT_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "wire_audit.h"

/* Where the frames came from. */
struct wire_source {
	bool live;
	const char *netns; /* live: NULL for the namespace tunbed-wire runs in */
	const char *iface; /* live */
	const char *path;  /* --read */
	bool has_stats;	   /* live: the kernel's counts below are known */
	uint64_t received; /* frames the capture socket took */
	uint64_t dropped;  /* frames it lost because the buffer was full */
};

/*
 * Builds the report of a finished audit, listing the top inner flows by bytes. Returns a new
 * document or NULL (out of memory). Main thread.
 */
json_t *wire_report_json(const struct wire_audit *a, const struct wire_source *src, unsigned top);

/* Writes the human text of a document made by wire_report_json. */
void wire_report_text(FILE *f, const json_t *doc);

#endif

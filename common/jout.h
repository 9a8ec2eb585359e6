/*
 * JSON output through jansson: short setters for building documents and one dump call, so
 * that every tool emits JSON the same way (UTF-8, keys in insertion order, one line or
 * indented).
 */
#ifndef TUNBED_JOUT_H
#define TUNBED_JOUT_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

enum jout_flags {
	JOUT_PRETTY = 1u << 0, /* indented, for people; otherwise one line */
};

/*
 * Setters: add key to obj, taking ownership of nothing. Each returns 0 or -ENOMEM. A NULL
 * string is stored as JSON null. jout_u64 stores values above INT64_MAX as a real.
 */
int jout_str(json_t *obj, const char *key, const char *val);
int jout_int(json_t *obj, const char *key, int64_t val);
int jout_u64(json_t *obj, const char *key, uint64_t val);
int jout_real(json_t *obj, const char *key, double val);
int jout_bool(json_t *obj, const char *key, bool val);

/* Adds val (reference stolen, also on failure) under key. Returns 0 or -ENOMEM. */
int jout_set(json_t *obj, const char *key, json_t *val);

/* Appends val (reference stolen, also on failure) to the array arr. Returns 0 or -ENOMEM. */
int jout_append(json_t *arr, json_t *val);

/* Writes doc and a newline to f and flushes. Returns 0 or -EIO. */
int jout_dump(FILE *f, const json_t *doc, unsigned flags);

#endif

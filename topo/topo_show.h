/*
 * `show`: the state of a topology read back from the kernel, as one JSON document
 * (docs/topology.md describes its fields) and as text rendered from that same document.
 */
#ifndef TUNBED_TOPO_SHOW_H
#define TUNBED_TOPO_SHOW_H

#include <jansson.h>
#include <stdio.h>

#include "topo.h"

/* Reads the hosts of t under prefix back from the kernel. Returns a new document or NULL. */
json_t *topo_show(const struct topo *t, const char *prefix);

/* Writes doc, as made by topo_show, for people. */
void topo_show_text(FILE *f, const json_t *doc);

#endif

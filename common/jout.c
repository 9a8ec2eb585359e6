/*
 * JSON output through jansson (see jout.h).
 */
#include "jout.h"

#include <errno.h>

int jout_set(json_t *obj, const char *key, json_t *val)
{
	if (!val)
		return -ENOMEM;
	return json_object_set_new(obj, key, val) ? -ENOMEM : 0;
}

int jout_append(json_t *arr, json_t *val)
{
	if (!val)
		return -ENOMEM;
	return json_array_append_new(arr, val) ? -ENOMEM : 0;
}

int jout_str(json_t *obj, const char *key, const char *val)
{
	return jout_set(obj, key, val ? json_string(val) : json_null());
}

int jout_int(json_t *obj, const char *key, int64_t val)
{
	return jout_set(obj, key, json_integer((json_int_t)val));
}

int jout_u64(json_t *obj, const char *key, uint64_t val)
{
	if (val > INT64_MAX)
		return jout_set(obj, key, json_real((double)val));
	return jout_set(obj, key, json_integer((json_int_t)val));
}

int jout_real(json_t *obj, const char *key, double val)
{
	return jout_set(obj, key, json_real(val));
}

int jout_bool(json_t *obj, const char *key, bool val)
{
	return jout_set(obj, key, json_boolean(val));
}

int jout_dump(FILE *f, const json_t *doc, unsigned flags)
{
	size_t jflags = JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10);

	jflags |= (flags & JOUT_PRETTY) ? JSON_INDENT(2) : JSON_COMPACT;
	if (json_dumpf(doc, f, jflags) != 0 || fputc('\n', f) == EOF || fflush(f) != 0)
		return -EIO;
	return 0;
}

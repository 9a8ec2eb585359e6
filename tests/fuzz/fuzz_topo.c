/*
 * libFuzzer harness for the topology parser and validator, and the planner behind them:
 * any input must either parse into a topology whose plan builds, or be refused with a message.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "topo.h"
#include "topo_plan.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct topo t;
	static struct topo_plan plan;
	struct line_error err;
	char line[512];

	if (topo_parse((const char *)data, size, &t, &err) != 0) {
		/* A refusal always says why. */
		if (err.msg[0] == '\0')
			abort();
		return 0;
	}
	if (topo_plan_build(&t, &plan) != 0)
		abort();
	for (int i = 0; i < plan.nsteps; i++)
		topo_step_describe(&t, t.prefix, &plan.steps[i], line, sizeof(line));
	return 0;
}

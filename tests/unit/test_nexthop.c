/*
 * The next hop as the main thread publishes it and the workers read it (gateway/nexthop.h):
 * a read sees each publication once; and with a writer publishing two hops in turn while a
 * reader tries READS reads, every read is one of the two whole, never a mix (the sequence
 * count). Bounded by the reader's tries, not by time or by how the two are scheduled.
 */
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "nexthop.h"

enum { READS = 200000 };

static struct nexthop_pub pub;
static struct nexthop_hop hop_a, hop_b;
static int reader_done, writer_started;

static struct nexthop_hop make_hop(int ifindex, uint8_t fill)
{
	struct nexthop_hop h;

	memset(&h, 0, sizeof(h));
	h.ifindex = ifindex;
	memset(h.eth, fill, sizeof(h.eth));
	return h;
}

static uint64_t publications;

static void *writer(void *arg)
{
	(void)arg;
	__atomic_store_n(&writer_started, 1, __ATOMIC_RELEASE);
	while (!__atomic_load_n(&reader_done, __ATOMIC_ACQUIRE))
		nexthop_publish(&pub, publications++ % 2 ? &hop_b : &hop_a);
	return NULL;
}

static void test_once(void)
{
	struct nexthop_hop got;
	uint32_t seen = 0;

	printf("case: nothing published: nothing to read\n");
	memset(&pub, 0, sizeof(pub));
	CHECK(!nexthop_read(&pub, &seen, &got));

	printf("case: each publication is read once\n");
	nexthop_publish(&pub, &hop_a);
	CHECK(nexthop_read(&pub, &seen, &got));
	CHECK(memcmp(&got, &hop_a, sizeof(got)) == 0);
	CHECK(!nexthop_read(&pub, &seen, &got));
	nexthop_publish(&pub, &hop_b);
	CHECK(nexthop_read(&pub, &seen, &got));
	CHECK(memcmp(&got, &hop_b, sizeof(got)) == 0);
	CHECK_INT(seen % 2, 0);
}

static void test_concurrent(void)
{
	pthread_t t;
	struct nexthop_hop got;
	uint32_t seen = 0;
	uint64_t reads = 0, torn = 0;

	printf("case: %d tries to read beside a writer see only whole hops\n", READS);
	memset(&pub, 0, sizeof(pub));
	nexthop_publish(&pub, &hop_a);
	CHECK_INT(pthread_create(&t, NULL, writer, NULL), 0);
	while (!__atomic_load_n(&writer_started, __ATOMIC_ACQUIRE))
		;
	for (unsigned i = 0; i < READS; i++) {
		if (!nexthop_read(&pub, &seen, &got)) {
			sched_yield(); /* the writer may share this CPU */
			continue;
		}
		reads++;
		if (memcmp(&got, &hop_a, sizeof(got)) != 0 &&
		    memcmp(&got, &hop_b, sizeof(got)) != 0)
			torn++;
	}
	__atomic_store_n(&reader_done, 1, __ATOMIC_RELEASE);
	pthread_join(t, NULL);
	CHECK(reads > 0); /* the first try sees at least the publication before the writer */
	CHECK_U64(torn, 0);
	printf("  %llu hops read of %llu published\n", (unsigned long long)reads,
	       (unsigned long long)publications);
}

int main(void)
{
	hop_a = make_hop(3, 0x11);
	hop_b = make_hop(7, 0xee);
	test_once();
	test_concurrent();
	return check_done("test_nexthop");
}

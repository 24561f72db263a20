/* The OpenSHMEM side of `icn shmem bench --oshmem`: the headline rows of
 * the icn benchmark measured with the same method (a count grown until a
 * round takes a tenth of the target time, then one round scaled to it)
 * over Open MPI's OSHMEM. PE 0 prints "ICNOSH api size count seconds".
 * Arguments: the target time in seconds, and optionally the icn tests
 * whose rows to measure (comma-separated; default all). */
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define WINDOW 64
#define BIG (1 << 20)

static double target = 0.1;
static long pSync[SHMEM_REDUCE_SYNC_SIZE > SHMEM_BCAST_SYNC_SIZE ?
		  (SHMEM_REDUCE_SYNC_SIZE > SHMEM_ALLTOALL_SYNC_SIZE ? SHMEM_REDUCE_SYNC_SIZE : SHMEM_ALLTOALL_SYNC_SIZE) :
		  (SHMEM_BCAST_SYNC_SIZE > SHMEM_ALLTOALL_SYNC_SIZE ? SHMEM_BCAST_SYNC_SIZE : SHMEM_ALLTOALL_SYNC_SIZE)];
static long pWrk[SHMEM_REDUCE_MIN_WRKDATA_SIZE + 16];
static long ctrl[2];
static long word[WINDOW];
static long counter;
static long red_src[8], red_dst[8];
static char big[BIG];
static char local[BIG];

static double now(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void reset_psync(void) {
	for (size_t i = 0; i < sizeof pSync / sizeof pSync[0]; i++)
		pSync[i] = SHMEM_SYNC_VALUE;
	shmem_barrier_all();
}

typedef void (*op_fn)(long count, int me, int npes);

/* measure1 runs op(count) collectively: PE 0 chooses the counts and shares
 * them through ctrl, as icn's benchEnv.measure does. */
static void measure1(const char *api, int size, op_fn op, int print) {
	int me = shmem_my_pe(), npes = shmem_n_pes();
	long count = 4, last = 0;
	double best = -1;
	for (;;) {
		if (me == 0) {
			for (int p = 1; p < npes; p++) {
				shmem_long_p(&ctrl[0], count, p);
				shmem_long_p(&ctrl[1], last, p);
			}
		}
		shmem_barrier_all();
		if (me != 0) {
			count = ctrl[0];
			last = ctrl[1];
		}
		double t0 = now();
		op(count, me, npes);
		double el = now() - t0;
		shmem_barrier_all();
		if (last) {
			if (me == 0 && print)
				printf("ICNOSH %s %d %ld %.9f\n", api, size, count, el);
			return;
		}
		if (me == 0) {
			double per = el / count;
			if (best < 0 || per < best)
				best = per;
			if (el >= target / 10 || count >= (1L << 32)) {
				/* scale by the best time per operation seen, so that
				 * one slow round on a loaded machine does not shrink
				 * the measured round */
				double c = target / (best > 1e-12 ? best : 1e-12);
				if (c > 64.0 * count)
					c = 64.0 * count;
				count = c < count ? count : c > (double)(1L << 32) ? (1L << 32) : (long)c;
				last = 1;
			} else if (el < target / 1000)
				count *= 16;
			else
				count *= 4;
		}
	}
}

/* measure warms up (OSHMEM's first calls set up connections) and then
 * measures. */
static void measure(const char *api, int size, op_fn op) {
	measure1(api, size, op, 0);
	measure1(api, size, op, 1);
}

static void put8(long count, int me, int npes) {
	if (me != 0) return;
	for (long i = 0; i < count; i++)
		shmem_long_p(&word[i & (WINDOW - 1)], i, 1);
	shmem_quiet();
}

static void put8_nbi(long count, int me, int npes) {
	if (me != 0) return;
	long v = 7;
	for (long i = 0; i < count;) {
		for (int k = 0; k < WINDOW && i < count; k++, i++)
			shmem_long_put_nbi(&word[k], &v, 1, 1);
		shmem_quiet();
	}
}

static void get8(long count, int me, int npes) {
	if (me != 0) return;
	long s = 0;
	for (long i = 0; i < count; i++)
		s += shmem_long_g(&word[0], 1);
	word[1] = s;
}

static void put_big(long count, int me, int npes) {
	if (me != 0) return;
	for (long i = 0; i < count; i++)
		shmem_putmem(big, local, BIG, 1);
	shmem_quiet();
}

static void fadd(long count, int me, int npes) {
	if (me != 0) return;
	for (long i = 0; i < count; i++)
		shmem_long_atomic_fetch_add(&counter, 1, 1);
}

static void barrier(long count, int me, int npes) {
	for (long i = 0; i < count; i++)
		shmem_barrier_all();
}

static void bcast(long count, int me, int npes) {
	for (long i = 0; i < count; i++) {
		shmem_broadcast64(red_dst, red_src, 1, 0, 0, 0, npes, pSync);
		shmem_barrier_all(); /* pSync reuse */
	}
}

static void reduce(long count, int me, int npes) {
	for (long i = 0; i < count; i++) {
		shmem_long_sum_to_all(red_dst, red_src, 1, 0, 0, npes, pWrk, pSync);
		shmem_barrier_all();
	}
}

static void alltoall(long count, int me, int npes) {
	for (long i = 0; i < count; i++) {
		shmem_alltoall64(red_dst, red_src, 1, 0, 0, npes, pSync);
		shmem_barrier_all();
	}
}

/* wanted reports whether test (an icn bench test name: rate, latency,
 * atomic, barrier, collective) is in the comma-separated list (NULL: all). */
static int wanted(const char *list, const char *test) {
	if (list == NULL || *list == 0)
		return 1;
	size_t n = strlen(test);
	for (const char *p = list; (p = strstr(p, test)) != NULL; p += n)
		if ((p == list || p[-1] == ',') && (p[n] == 0 || p[n] == ','))
			return 1;
	return 0;
}

int main(int argc, char **argv) {
	const char *tests = argc > 2 ? argv[2] : NULL;
	if (argc > 1)
		target = atof(argv[1]);
	shmem_init();
	reset_psync();
	if (wanted(tests, "rate")) {
		measure("put", 8, put8);
		measure("put_nbi", 8, put8_nbi);
	}
	if (wanted(tests, "latency"))
		measure("get", 8, get8);
	if (wanted(tests, "rate"))
		measure("put", BIG, put_big);
	if (wanted(tests, "atomic"))
		measure("fetch_add", 8, fadd);
	if (wanted(tests, "barrier"))
		measure("barrier", 0, barrier);
	if (wanted(tests, "collective")) {
		reset_psync();
		measure("broadcast", 8, bcast);
		reset_psync();
		measure("reduce", 8, reduce);
		reset_psync();
		measure("alltoall", 8, alltoall);
	}
	fflush(stdout);
	shmem_finalize(); /* OSHMEM may crash here after correct output */
	return 0;
}

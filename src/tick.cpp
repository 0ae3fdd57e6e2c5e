// SPDX-License-Identifier: MIT
// src/tick.cpp - the tick's choice and its rate (src/tick.h has the contract).
#include "src/common.h"

#include <pthread.h>
#include <time.h>

#include "src/tick.h"

namespace knit::detail {

int g_tick_counter = 0;

namespace {

pthread_once_t g_once = PTHREAD_ONCE_INIT;
pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
// The calibration's first point (written once under g_once).
int64_t g_t0, g_m0;
// ns per tick in 32.32 fixed point once known (0 until then). Relaxed and
// acquire: see tick_ns.
uint64_t g_mult;

// A (tick, CLOCK_MONOTONIC ns) pair read as close together as a few tries
// allow: the tick between two clock readings, from the try whose readings
// lay closest.
void pair(int64_t *t, int64_t *m)
{
	int64_t best = INT64_MAX;
	for (int i = 0; i < 5; i++) {
		const int64_t a = knit_now_ns();
		const int64_t k = (int64_t)knit_tick_read();
		const int64_t b = knit_now_ns();
		if (b - a < best) {
			best = b - a;
			*t = k;
			*m = a + (b - a) / 2;
		}
	}
}

void init_once()
{
	if (!knit_tick_usable())
		return; // CLOCK_MONOTONIC: ticks are ns
	const uint64_t hz = knit_tick_hz();
	if (hz != 0) {
		knit_store_release_64(&g_mult, (uint64_t)(1e9 / (double)hz * 4294967296.0));
	} else {
		pair(&g_t0, &g_m0);
	}
	g_tick_counter = 1;
}

// The rate from the first point to now, the span made long enough.
uint64_t calibrate()
{
	pthread_mutex_lock(&g_mu);
	uint64_t m = knit_load_relaxed_64(&g_mult);
	if (m == 0) {
		int64_t t1, m1;
		pair(&t1, &m1);
		if (m1 - g_m0 < kTickCalibrateNs) {
			// Early (the first conversion right after the first pool's
			// create): wait out the rest of the span, once per process.
			const struct timespec ts =
				knit__ns_to_timespec(kTickCalibrateNs - (m1 - g_m0));
			nanosleep(&ts, nullptr);
			pair(&t1, &m1);
		}
		const double per = t1 > g_t0 ? (double)(m1 - g_m0) / (double)(t1 - g_t0) : 1.0;
		m = (uint64_t)(per * 4294967296.0);
		if (m == 0)
			m = 1;
		// Release: pairs with the acquire load in tick_ns (another
		// thread's conversion then uses the rate, not a torn one).
		knit_store_release_64(&g_mult, m);
	}
	pthread_mutex_unlock(&g_mu);
	return m;
}

} // namespace

void tick_init() { pthread_once(&g_once, init_once); }

int64_t tick_ns(int64_t ticks)
{
	if (ticks <= 0)
		return 0;
	if (!g_tick_counter)
		return ticks;
	// Acquire: pairs with the release store in calibrate()/init_once().
	uint64_t m = knit_load_acquire_64(&g_mult);
	if (KNIT_UNLIKELY(m == 0))
		m = calibrate();
	return (int64_t)(((unsigned __int128)(uint64_t)ticks * m) >> 32);
}

} // namespace knit::detail

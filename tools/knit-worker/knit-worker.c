/* SPDX-License-Identifier: MIT */
/*
 * knit-worker - a process pool's worker (KNIT_WORKERS_PROCESSES). Started by
 * libknitting only, never by hand: everything it does is libknitting's
 * private entry knit__worker_main (see knit-worker(8)), after it registers
 * its seccomp loader (seccomp.c, the one user of libseccomp) where it was
 * built with one (KNIT_WORKER_SECCOMP).
 */
#include <stddef.h>
#include <stdint.h>

int knit__worker_main(int argc, char **argv);

#if KNIT_WORKER_SECCOMP
typedef int (*knit_seccomp_loader)(uint32_t sets, const char *const *allow, uint32_t nallow,
				   int32_t self, int32_t host, char *msg, size_t msg_size);
void knit__worker_seccomp(knit_seccomp_loader load);
int knit_seccomp_load(uint32_t sets, const char *const *allow, uint32_t nallow, int32_t self,
		      int32_t host, char *msg, size_t msg_size);
#endif

int main(int argc, char **argv)
{
#if KNIT_WORKER_SECCOMP
	knit__worker_seccomp(knit_seccomp_load);
#endif
	return knit__worker_main(argc, argv);
}

/* SPDX-License-Identifier: MIT */
/*
 * knit-worker - a process pool's worker (KNIT_WORKERS_PROCESSES). Started by
 * libknitting only, never by hand: everything it does is libknitting's
 * private entry knit__worker_main (see knit-worker(8)).
 */
int knit__worker_main(int argc, char **argv);

int main(int argc, char **argv) { return knit__worker_main(argc, argv); }

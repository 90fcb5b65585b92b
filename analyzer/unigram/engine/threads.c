/* Work spread over threads: the seeds' and the piece index's steps each run a job on every
   thread at once. */

#include <pthread.h>

#include "unigram.h"

void on_threads(void *(*job)(void *), void *items, size_t size, int n) {
    pthread_t ids[MAX_THREADS];
    int started = 1;
    for (; started < n; started++)
        if (pthread_create(&ids[started], NULL, job, (char *)items + (size_t)started * size) != 0) break;
    job(items);
    for (int i = 1; i < started; i++) pthread_join(ids[i], NULL);
    for (int i = started; i < n; i++) job((char *)items + (size_t)i * size);  /* not started: here */
}

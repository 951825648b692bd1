/* A plain C program with no ML framework: worker threads hash a buffer, write and
 * read a temporary file, and sleep a little each round. strata records it with its
 * OS level only (no instrumentation, no framework). Usage: plain_c [ROUNDS] [THREADS] */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int rounds = 40;

static uint64_t hash_buffer(const unsigned char* p, size_t n, uint64_t h) {
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

static void* worker(void* arg) {
  long id = (long)arg;
  size_t n = 1 << 20;
  unsigned char* buf = malloc(n);
  char path[64];
  snprintf(path, sizeof path, "/tmp/strata-plain-c-%d-%ld", (int)getpid(), id);
  uint64_t h = 1469598103934665603ull;
  for (int r = 0; r < rounds; ++r) {
    memset(buf, (int)(r + id), n);
    for (int k = 0; k < 8; ++k) h = hash_buffer(buf, n, h);
    FILE* f = fopen(path, "wb");
    if (f) {
      fwrite(buf, 1, n, f);
      fclose(f);
    }
    f = fopen(path, "rb");
    if (f) {
      size_t got = fread(buf, 1, n, f);
      h ^= got;
      fclose(f);
    }
    struct timespec ts = {0, 2 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  unlink(path);
  free(buf);
  return (void*)(uintptr_t)h;
}

int main(int argc, char** argv) {
  if (argc > 1) rounds = atoi(argv[1]);
  int threads = argc > 2 ? atoi(argv[2]) : 3;
  pthread_t tid[64];
  if (threads > 64) threads = 64;
  for (long i = 0; i < threads; ++i) pthread_create(&tid[i], NULL, worker, (void*)i);
  uint64_t all = 0;
  for (int i = 0; i < threads; ++i) {
    void* r;
    pthread_join(tid[i], &r);
    all ^= (uint64_t)(uintptr_t)r;
  }
  printf("rounds=%d threads=%d hash=%016llx\n", rounds, threads, (unsigned long long)all);
  return 0;
}

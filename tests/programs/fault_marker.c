/* A library that must never be loaded by a privileged process: the setuid test
 * of tests/fault_safety_test.cc names it in STRATA_TORCH_LIB. Loaded, it leaves
 * a marker file (at $STRATA_TEST_MARKER) from its constructor and from the
 * observer entry point libstrata calls. */
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

static void leave_marker(void) {
  const char* path = getenv("STRATA_TEST_MARKER");
  if (!path) return;
  int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0666);
  if (fd >= 0) {
    char line[64];
    int n = 0;
    unsigned euid = (unsigned)geteuid();
    char digits[16];
    int k = 0;
    do digits[k++] = (char)('0' + euid % 10);
    while ((euid /= 10) && k < 15);
    const char* prefix = "loaded with euid ";
    while (*prefix) line[n++] = *prefix++;
    while (k) line[n++] = digits[--k];
    line[n++] = '\n';
    ssize_t w = write(fd, line, (size_t)n);
    (void)w;
    close(fd);
  }
}

__attribute__((constructor)) static void on_load(void) { leave_marker(); }

__attribute__((visibility("default"))) int strata_torch_start(const char* way) {
  (void)way;
  leave_marker();
  return 0;
}

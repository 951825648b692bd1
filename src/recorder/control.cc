// Maps the trace directory's control block (format/control.h) into a traced
// process, read-only.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/files.h"
#include "format/control.h"
#include "recorder/runtime.h"
#include "recorder/runtime_internal.h"

namespace strata::recorder {
namespace {

// A block with every base tier on, for processes recorded without a supervisor.
format::ControlBlock g_default_block = {format::kControlMagic, format::kControlVersion, sizeof(format::ControlBlock),
                                        {0},
                                        {format::kTierOps | format::kTierMemory},
                                        {0},
                                        {UINT64_MAX}};
const format::ControlBlock* g_block = &g_default_block;

}  // namespace

void MapControlBlock(const std::string& dir) {
  std::string path = JoinPath(dir, "control");
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  void* p = ::mmap(nullptr, format::kControlFileSize, PROT_READ, MAP_SHARED, fd, 0);
  ::close(fd);
  if (p == MAP_FAILED) return;
  auto* b = static_cast<const format::ControlBlock*>(p);
  if (b->magic != format::kControlMagic || b->version < 1 || b->size < sizeof(format::ControlBlock)) {
    ::munmap(p, format::kControlFileSize);
    return;
  }
  g_block = b;
}

const format::ControlBlock& Control() { return *g_block; }

}  // namespace strata::recorder

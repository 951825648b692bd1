// Fuzz target: the decoding of CPython 3.11-3.13 stacks read from a traced
// process's memory (collectors/os/python_stacks.h): the walk from _PyRuntime
// through the interpreter's thread states, the frame chain and each code
// object's name strings. Every pointer in that memory is untrusted: the
// process may be anywhere in its life, or corrupt.
//
// The input is a memory image placed at a fixed address (kBase) in this very
// process, which ReadStack reads with process_vm_readv like any traced
// process's memory; pointers in the image are absolute (kBase + offset), so
// seeds (make_fuzz_seeds python-stacks) keep their meaning from run to run.
//   image[0..3]  the thread id to look up
//   image[4..7]  offset of _PyRuntime in the image
// The image is walked as each supported version's interpreter in turn (seeds
// are written with 3.11's layout; the others read them as hostile memory).
// Pointers outside the image read this process's other memory or fail (EFAULT),
// as stale pointers into a real process do.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "collectors/os/python_stacks.h"
#include "fuzz/python_image.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace strata::collectors::os;
  using strata::fuzz::kPyImageBase;
  using strata::fuzz::kPyImageSize;
  static uint8_t* mem = [] {
    void* m = ::mmap(reinterpret_cast<void*>(kPyImageBase), kPyImageSize, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    if (m != reinterpret_cast<void*>(kPyImageBase)) std::abort();
    return static_cast<uint8_t*>(m);
  }();
  static size_t used = 0;
  size_t n = std::min(size, kPyImageSize);
  std::memset(mem, 0, used);
  std::memcpy(mem, data, n);
  used = n;
  uint32_t tid = 0, runtime_off = 0;
  if (n >= 8) {
    std::memcpy(&tid, mem, 4);
    std::memcpy(&runtime_off, mem + 4, 4);
  }
  std::vector<PythonFrame> frames;
  for (size_t v = 0; v < kStrataPyLayoutCount; ++v) {
    PythonStacks stacks;
    stacks.Assume(::getpid(), kStrataPyLayouts[v]);
    // Twice: the second walk goes through the caches of thread states and code objects.
    for (int pass = 0; pass < 2; ++pass) {
      frames.clear();
      (void)stacks.ReadStack(::getpid(), kPyImageBase + runtime_off, tid, &frames);
      if (frames.size() > 256) __builtin_trap();  // the depth is bounded
      for (const PythonFrame& f : frames)
        if (f.function.size() > 4096 || f.file.size() > 4096) __builtin_trap();  // so are the names
    }
  }
  return 0;
}

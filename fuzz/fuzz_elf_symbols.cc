// Fuzz target: the symbol tables strata reads from the ELF files a traced
// process maps (collectors/os/symbolizer.h): program headers, build-id notes,
// .symtab/.dynsym, names, and the lookups CPU samples and the Python stack
// reader make (function at a file offset, demangling, _PyRuntime). The input is
// the ELF file. A file that is not ELF, or a corrupt one, must give no symbols,
// never a crash.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "base/files.h"
#include "collectors/os/symbolizer.h"
#include "fuzz/trace_records.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace strata::collectors::os;
  static const std::string path = strata::fuzz::MakeTraceDir("elf") + "/libfuzz.so";
  if (!strata::WriteFileAtomic(path, std::string_view(reinterpret_cast<const char*>(data), size)).ok()) std::abort();
  // Mapped as a process maps a library: the file at 0x400000, and one page past
  // its end; samples fall at offsets taken from the input's own words.
  AddressSpace as;
  uint64_t base = 0x400000, len = (size + 4096) & ~uint64_t{4095};
  as.Add({base, base + len, 0, path, ""});
  Symbolizer sym;
  const ElfSymbols* s = sym.SymbolsFor(as.mappings()[0]);
  if (s) {
    (void)s->SymbolAddress("_PyRuntime");
    (void)s->SymbolAddress("Py_Version");
    uint64_t va;
    (void)s->OffsetToVaddr(0, &va);
  }
  (void)sym.IsExecFile(path);
  for (size_t i = 0; i + 8 <= size && i < 64 * 8; i += 8) {
    uint64_t off;
    std::memcpy(&off, data + i, 8);
    (void)sym.Symbolize(as, base + off % len);
  }
  for (uint64_t off = 0; off < len; off += 64) (void)sym.Symbolize(as, base + off);
  return 0;
}

// User-space symbolization: address spaces built from MMAP2 records, and ELF
// symbol tables read with libelf, sorted once and binary-searched (about 25 ns
// a lookup, vs 1-70 us for libdw's dwfl_module_addrinfo; see the research note
// on perf_event).
//
// Symbols come from the file's .symtab, else from the separate debug file
// /usr/lib/debug/.build-id/xx/yyyy.debug (Debian -dbg/-dbgsym packages) when its
// build-id matches, else from .dynsym. Tables are cached by build-id (by path
// when a file has none), so many processes of one program share them.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

struct Elf;  // libelf

namespace strata::collectors::os {

struct Mapping {
  uint64_t start = 0, end = 0;  // [start, end)
  uint64_t pgoff = 0;           // file offset of `start`
  std::string path;             // file, or [vdso], [anon], ...
  std::string build_id;         // hex, from the MMAP2 record when the kernel provided it
};

// The executable mappings of one process image. Later mappings replace the
// parts of earlier ones they overlap, as mmap(2) does.
class AddressSpace {
 public:
  void Add(Mapping m);
  const Mapping* Find(uint64_t pc) const;
  const std::vector<Mapping>& mappings() const { return maps_; }
  // Bumped by every Add; unwinders rebuild their module lists when it changes.
  uint64_t generation() const { return generation_; }

 private:
  std::vector<Mapping> maps_;  // sorted by start, disjoint
  uint64_t generation_ = 0;
};

class ElfSymbols {
 public:
  // Loads `path` (an ELF file) or, for "[vdso]", this process's own vDSO (the
  // same image every process of this kernel maps). Returns null if unreadable.
  static std::unique_ptr<ElfSymbols> Load(const std::string& path, const std::string& want_build_id);

  // The function containing file offset `offset`, or null.
  const char* FunctionAtOffset(uint64_t offset, uint64_t* symbol_offset) const;
  // The virtual address (as linked) of one of the CPython data symbols python_stacks.cc reads
  // (_PyRuntime, Py_Version, PyCode_Type, PyUnicode_Type, PyBytes_Type); 0 if absent.
  uint64_t SymbolAddress(std::string_view name) const;
  // Virtual address (as linked) of file offset `offset`; false when no PT_LOAD covers it.
  bool OffsetToVaddr(uint64_t offset, uint64_t* vaddr) const;
  bool is_exec() const { return is_exec_; }  // ET_EXEC: linked at its run-time address
  const std::string& build_id() const { return build_id_; }
  bool has_symtab() const { return has_symtab_; }
  size_t num_functions() const { return funcs_.size(); }

 private:
  struct Func {
    uint64_t addr, end;
    uint32_t name;  // offset into names_
  };
  struct Segment {
    uint64_t offset, filesz, vaddr;
  };
  bool ReadElf(::Elf* e, bool want_loads);
  std::vector<Func> funcs_;
  std::string names_;
  std::vector<Segment> loads_;
  std::unordered_map<std::string, uint64_t> objects_;  // a few data symbols we look up (_PyRuntime, Py_Version)
  std::string build_id_;
  bool is_exec_ = false;
  bool has_symtab_ = false;
};

struct SymbolInfo {
  std::string function;  // demangled; "[unknown]" when no symbol covers the address
  std::string module;    // the mapped file's base name, or [vdso], [unknown]
  uint64_t module_offset = 0;
};

class Symbolizer {
 public:
  SymbolInfo Symbolize(const AddressSpace& as, uint64_t pc);
  // Symbols of the file behind `m` (cached); null if it cannot be read.
  const ElfSymbols* SymbolsFor(const Mapping& m);
  // A kernel address, through /proc/kallsyms when it shows addresses (root).
  SymbolInfo SymbolizeKernel(uint64_t pc);
  // Whether `path` is an ET_EXEC file (reads only its ELF header; cached).
  bool IsExecFile(const std::string& path);

 private:
  std::unordered_map<std::string, std::unique_ptr<ElfSymbols>> cache_;  // by build-id or path
  std::unordered_map<std::string, std::string> demangled_;
  std::unordered_map<std::string, bool> is_exec_;
  std::vector<std::pair<uint64_t, std::string>> kallsyms_;
  bool kallsyms_loaded_ = false;
  std::string Demangle(const char* name);
};

// "[anon]"-style names and the base name of a path.
std::string ModuleName(const std::string& path);
// Lower-case hex of a build-id.
std::string HexBuildId(const uint8_t* id, size_t n);

}  // namespace strata::collectors::os

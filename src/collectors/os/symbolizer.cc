#include "collectors/os/symbolizer.h"

#include <cxxabi.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>

namespace strata::collectors::os {

void AddressSpace::Add(Mapping m) {
  if (m.end <= m.start) return;
  std::vector<Mapping> out;
  out.reserve(maps_.size() + 2);
  for (Mapping& old : maps_) {
    if (old.end <= m.start || old.start >= m.end) {
      out.push_back(std::move(old));
      continue;
    }
    // Keep the parts of `old` outside the new mapping.
    if (old.start < m.start) {
      Mapping left = old;
      left.end = m.start;
      out.push_back(std::move(left));
    }
    if (old.end > m.end) {
      Mapping right = old;
      right.pgoff += m.end - old.start;
      right.start = m.end;
      out.push_back(std::move(right));
    }
  }
  out.push_back(std::move(m));
  std::sort(out.begin(), out.end(), [](const Mapping& a, const Mapping& b) { return a.start < b.start; });
  maps_.swap(out);
  ++generation_;
}

const Mapping* AddressSpace::Find(uint64_t pc) const {
  auto it = std::upper_bound(maps_.begin(), maps_.end(), pc, [](uint64_t v, const Mapping& m) { return v < m.start; });
  if (it == maps_.begin()) return nullptr;
  --it;
  return pc < it->end ? &*it : nullptr;
}

std::string ModuleName(const std::string& path) {
  if (path.empty()) return "[anon]";
  if (path[0] == '[') return path;
  auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string HexBuildId(const uint8_t* id, size_t n) {
  static const char* kHex = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < n; ++i) {
    s += kHex[id[i] >> 4];
    s += kHex[id[i] & 15];
  }
  return s;
}

namespace {

// The interpreter's data that python_stacks.cc reads: its runtime, its
// version, and the type objects that tell a code object or a string.
bool IsPythonObject(const char* name) {
  for (const char* n : {"_PyRuntime", "Py_Version", "PyCode_Type", "PyUnicode_Type", "PyBytes_Type"})
    if (std::strcmp(name, n) == 0) return true;
  return false;
}

// An ELF handle on a file (libelf maps it) or on a private copy of memory.
class ElfHandle {
 public:
  ~ElfHandle() {
    if (elf_) elf_end(elf_);
    if (fd_ >= 0) ::close(fd_);
  }
  bool OpenFile(const std::string& path) {
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) return false;
    struct stat st;
    if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) return false;
    elf_ = elf_begin(fd_, ELF_C_READ_MMAP, nullptr);
    return elf_ && elf_kind(elf_) == ELF_K_ELF;
  }
  bool OpenMemory(const uint8_t* p, size_t n) {
    copy_.assign(p, p + n);  // libelf may write into a memory image; never into the live vDSO
    elf_ = elf_memory(copy_.data(), copy_.size());
    return elf_ && elf_kind(elf_) == ELF_K_ELF;
  }
  Elf* get() const { return elf_; }

 private:
  int fd_ = -1;
  Elf* elf_ = nullptr;
  std::vector<char> copy_;
};

std::string ElfBuildId(Elf* e) {
  Elf_Scn* scn = nullptr;
  while ((scn = elf_nextscn(e, scn))) {
    GElf_Shdr sh;
    if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE) continue;
    Elf_Data* d = elf_getdata(scn, nullptr);
    if (!d) continue;
    size_t off = 0, name_off, desc_off;
    GElf_Nhdr nh;
    while ((off = gelf_getnote(d, off, &nh, &name_off, &desc_off)) > 0)
      if (nh.n_type == NT_GNU_BUILD_ID && desc_off + nh.n_descsz <= d->d_size)
        return HexBuildId(static_cast<const uint8_t*>(d->d_buf) + desc_off, nh.n_descsz);
  }
  return "";
}

}  // namespace

bool ElfSymbols::ReadElf(Elf* e, bool want_loads) {
  GElf_Ehdr eh;
  if (!gelf_getehdr(e, &eh)) return false;
  if (want_loads) {
    is_exec_ = eh.e_type == ET_EXEC;
    size_t n = 0;
    elf_getphdrnum(e, &n);
    // A corrupt header can claim billions of entries (e_phnum = PN_XNUM and
    // a count in section 0): the table ends where the first one cannot be read.
    for (size_t i = 0; i < n && i < (size_t{1} << 16); ++i) {
      GElf_Phdr ph;
      if (!gelf_getphdr(e, static_cast<int>(i), &ph)) break;
      if (ph.p_type == PT_LOAD) loads_.push_back({ph.p_offset, ph.p_filesz, ph.p_vaddr});
    }
    build_id_ = ElfBuildId(e);
  }
  Elf_Scn* scn = nullptr;
  Elf_Scn* symtab = nullptr;
  Elf_Scn* dynsym = nullptr;
  while ((scn = elf_nextscn(e, scn))) {
    GElf_Shdr sh;
    if (!gelf_getshdr(scn, &sh)) continue;
    if (sh.sh_type == SHT_SYMTAB) symtab = scn;
    if (sh.sh_type == SHT_DYNSYM) dynsym = scn;
  }
  bool got = false;
  for (Elf_Scn* s : {symtab, dynsym}) {
    if (!s) continue;
    if (got && s == dynsym) break;  // .symtab is a superset of .dynsym
    GElf_Shdr sh;
    if (!gelf_getshdr(s, &sh) || sh.sh_entsize == 0) continue;
    Elf_Data* d = elf_getdata(s, nullptr);
    if (!d) continue;
    size_t count = std::min<size_t>(sh.sh_size / sh.sh_entsize, d->d_size / sh.sh_entsize);
    for (size_t i = 0; i < count; ++i) {
      GElf_Sym sym;
      if (!gelf_getsym(d, static_cast<int>(i), &sym) || sym.st_value == 0 || sym.st_shndx == SHN_UNDEF) continue;
      int type = GELF_ST_TYPE(sym.st_info);
      const char* name = elf_strptr(e, sh.sh_link, sym.st_name);
      if (!name || !*name) continue;
      if (type == STT_FUNC || type == STT_GNU_IFUNC) {
        funcs_.push_back({sym.st_value, sym.st_value + sym.st_size, static_cast<uint32_t>(names_.size())});
        // "pthread_mutex_lock@@GLIBC_2.2.5": the version is noise in a profile.
        const char* at = std::strchr(name, '@');
        names_.append(name, at ? static_cast<size_t>(at - name) : std::strlen(name));
        names_.push_back('\0');
      } else if (type == STT_OBJECT && IsPythonObject(name)) {
        objects_[name] = sym.st_value;
      }
    }
    got = got || !funcs_.empty();
    if (s == symtab && !funcs_.empty()) has_symtab_ = true;
  }
  return true;
}

std::unique_ptr<ElfSymbols> ElfSymbols::Load(const std::string& path, const std::string& want_build_id) {
  static const bool init = elf_version(EV_CURRENT) != EV_NONE;
  if (!init) return nullptr;
  auto out = std::unique_ptr<ElfSymbols>(new ElfSymbols());
  if (path == "[vdso]") {
    // Every process maps the same vDSO image: read our own.
    auto base = static_cast<uintptr_t>(::getauxval(AT_SYSINFO_EHDR));
    if (!base) return nullptr;
    std::ifstream maps("/proc/self/maps");
    std::string line;
    size_t size = 0;
    while (std::getline(maps, line))
      if (line.find("[vdso]") != std::string::npos) {
        size = std::strtoull(line.c_str() + line.find('-') + 1, nullptr, 16) - std::strtoull(line.c_str(), nullptr, 16);
        break;
      }
    ElfHandle h;
    if (!size || !h.OpenMemory(reinterpret_cast<const uint8_t*>(base), size) || !out->ReadElf(h.get(), true))
      return nullptr;
  } else {
    ElfHandle h;
    if (!h.OpenFile(path) || !out->ReadElf(h.get(), true)) return nullptr;
    std::string bid = !want_build_id.empty() ? want_build_id : out->build_id_;
    bool file_matches = want_build_id.empty() || want_build_id == out->build_id_;
    if ((!out->has_symtab_ || !file_matches) && bid.size() > 2) {
      // Debian's -dbg / -dbgsym packages install full symbol tables by build-id.
      ElfHandle dbg;
      std::string dbg_path = "/usr/lib/debug/.build-id/" + bid.substr(0, 2) + "/" + bid.substr(2) + ".debug";
      if (dbg.OpenFile(dbg_path)) {
        ElfSymbols d;
        if (d.ReadElf(dbg.get(), false) && !d.funcs_.empty()) {
          out->funcs_ = std::move(d.funcs_);
          out->names_ = std::move(d.names_);
          for (auto& [k, v] : d.objects_) out->objects_[k] = v;
          out->has_symtab_ = true;
          file_matches = true;
        }
      }
    }
    // The file on disk is not the one that ran (rebuilt since): its symbols would lie.
    if (!file_matches) {
      out->funcs_.clear();
      out->names_.clear();
      out->objects_.clear();
    }
  }
  auto& f = out->funcs_;
  std::sort(f.begin(), f.end(), [](const Func& a, const Func& b) { return a.addr != b.addr ? a.addr < b.addr : a.end > b.end; });
  // Symbols without a size extend to the next one.
  for (size_t i = 0; i < f.size(); ++i)
    if (f[i].end <= f[i].addr) f[i].end = i + 1 < f.size() ? f[i + 1].addr : f[i].addr + 1;
  return out;
}

bool ElfSymbols::OffsetToVaddr(uint64_t offset, uint64_t* vaddr) const {
  for (const Segment& l : loads_)
    if (offset >= l.offset && offset < l.offset + l.filesz) {
      *vaddr = offset - l.offset + l.vaddr;
      return true;
    }
  return false;
}

const char* ElfSymbols::FunctionAtOffset(uint64_t offset, uint64_t* symbol_offset) const {
  uint64_t va;
  if (!OffsetToVaddr(offset, &va)) return nullptr;
  auto it = std::upper_bound(funcs_.begin(), funcs_.end(), va, [](uint64_t v, const Func& f) { return v < f.addr; });
  // Walk back over symbols that start earlier but may still cover va (aliases, nested sizes).
  for (int k = 0; k < 4 && it != funcs_.begin(); ++k) {
    --it;
    if (va < it->end) {
      if (symbol_offset) *symbol_offset = va - it->addr;
      return names_.data() + it->name;
    }
  }
  return nullptr;
}

uint64_t ElfSymbols::SymbolAddress(std::string_view name) const {
  auto it = objects_.find(std::string(name));
  return it == objects_.end() ? 0 : it->second;
}

const ElfSymbols* Symbolizer::SymbolsFor(const Mapping& m) {
  if (m.path.empty() || (m.path[0] == '[' && m.path != "[vdso]") || m.path.rfind("//anon", 0) == 0) return nullptr;
  const std::string& key = m.build_id.empty() ? m.path : m.build_id;
  auto it = cache_.find(key);
  if (it == cache_.end()) it = cache_.emplace(key, ElfSymbols::Load(m.path, m.build_id)).first;
  return it->second.get();
}

std::string Symbolizer::Demangle(const char* name) {
  if (name[0] != '_' || name[1] != 'Z') return name;
  auto it = demangled_.find(name);
  if (it != demangled_.end()) return it->second;
  int status = 0;
  char* d = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  std::string out = (status == 0 && d) ? d : name;
  std::free(d);
  demangled_.emplace(name, out);
  return out;
}

SymbolInfo Symbolizer::Symbolize(const AddressSpace& as, uint64_t pc) {
  SymbolInfo r;
  const Mapping* m = as.Find(pc);
  if (!m) {
    r.function = "[unknown]";
    r.module = "[unknown]";
    return r;
  }
  r.module = ModuleName(m->path);
  uint64_t offset = pc - m->start + m->pgoff;
  r.module_offset = offset;
  const ElfSymbols* syms = SymbolsFor(*m);
  uint64_t sym_off = 0;
  const char* f = syms ? syms->FunctionAtOffset(offset, &sym_off) : nullptr;
  r.function = f ? Demangle(f) : "[unknown]";
  return r;
}

bool Symbolizer::IsExecFile(const std::string& path) {
  auto it = is_exec_.find(path);
  if (it != is_exec_.end()) return it->second;
  bool exec = false;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    unsigned char h[18];
    // e_ident[0..3] = "\x7fELF"; e_type (u16, little-endian on x86-64) at 16.
    if (::pread(fd, h, sizeof h, 0) == static_cast<ssize_t>(sizeof h) && std::memcmp(h, "\x7f" "ELF", 4) == 0)
      exec = (h[16] | (h[17] << 8)) == ET_EXEC;
    ::close(fd);
  }
  is_exec_.emplace(path, exec);
  return exec;
}

SymbolInfo Symbolizer::SymbolizeKernel(uint64_t pc) {
  if (!kallsyms_loaded_) {
    kallsyms_loaded_ = true;
    std::ifstream f("/proc/kallsyms");
    std::string addr, type, name;
    std::string rest;
    while (f >> addr >> type >> name) {
      std::getline(f, rest);
      if (type != "t" && type != "T") continue;
      uint64_t a = std::strtoull(addr.c_str(), nullptr, 16);
      if (a) kallsyms_.emplace_back(a, name);
    }
    std::sort(kallsyms_.begin(), kallsyms_.end());
  }
  SymbolInfo r;
  r.module = "[kernel]";
  auto it = std::upper_bound(kallsyms_.begin(), kallsyms_.end(), pc,
                             [](uint64_t v, const std::pair<uint64_t, std::string>& e) { return v < e.first; });
  r.function = it == kallsyms_.begin() ? "[kernel]" : std::prev(it)->second;
  return r;
}

}  // namespace strata::collectors::os

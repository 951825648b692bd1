#include "collectors/os/python_stacks.h"

#include <sys/uio.h>

#include <algorithm>
#include <cstring>

#include "collectors/os/python_layout.h"

namespace strata::collectors::os {
namespace {

const StrataPyLayout* Layout() { return StrataPython311Layout(); }

uint64_t U64At(const std::vector<uint8_t>& b, size_t off) {
  uint64_t v = 0;
  if (off + 8 <= b.size()) std::memcpy(&v, b.data() + off, 8);
  return v;
}

constexpr size_t kMaxDepth = 256;

}  // namespace

bool PythonStacks::Supported() { return Layout() != nullptr; }

std::string PythonStacks::SupportedVersion() {
  const StrataPyLayout* l = Layout();
  if (!l) return "";
  return std::to_string(l->version_hex >> 24) + "." + std::to_string((l->version_hex >> 16) & 0xff);
}

bool PythonStacks::Read(pid_t pid, uint64_t addr, void* buf, size_t n) {
  ++reads_;
  iovec local{buf, n};
  iovec remote{reinterpret_cast<void*>(addr), n};
  return addr != 0 && ::process_vm_readv(pid, &local, 1, &remote, 1, 0) == static_cast<ssize_t>(n);
}

uint64_t PythonStacks::FindRuntime(pid_t pid, const AddressSpace& as, Symbolizer* sym, std::string* why) {
  const StrataPyLayout* l = Layout();
  for (const Mapping& m : as.mappings()) {
    std::string base = ModuleName(m.path);
    if (base.rfind("python", 0) != 0 && base.rfind("libpython", 0) != 0) continue;
    const ElfSymbols* s = sym->SymbolsFor(m);
    if (!s) continue;
    uint64_t runtime = s->SymbolAddress("_PyRuntime");
    if (!runtime) continue;
    uint64_t v0;
    if (!s->OffsetToVaddr(m.pgoff, &v0)) continue;
    uint64_t bias = m.start - v0;
    uint64_t version_addr = s->SymbolAddress("Py_Version");
    uint32_t version = 0;
    if (!version_addr || !Read(pid, version_addr + bias, &version, 4)) {
      if (why) *why = base + ": a Python older than 3.11 (no Py_Version)";
      return 0;
    }
    if (!l) {
      if (why) *why = "strata was built without python3.11-dev";
      return 0;
    }
    if ((version >> 16) != (l->version_hex >> 16)) {
      if (why)
        *why = base + ": Python " + std::to_string(version >> 24) + "." + std::to_string((version >> 16) & 0xff) +
               " (strata reads " + SupportedVersion() + ")";
      return 0;
    }
    return runtime + bias;
  }
  return 0;
}

bool PythonStacks::ReadString(pid_t pid, uint64_t obj, std::string* out) {
  const StrataPyLayout* l = Layout();
  std::vector<uint8_t> hdr(l->ascii_size);
  if (!Read(pid, obj, hdr.data(), hdr.size())) return false;
  uint64_t length = U64At(hdr, l->ascii_length);
  uint32_t state;
  std::memcpy(&state, hdr.data() + l->ascii_state, 4);
  bool compact = (state >> 5) & 1, ascii = (state >> 6) & 1;
  uint64_t text = 0;
  if (compact && ascii) {
    text = obj + l->ascii_size;
  } else if (compact) {
    // Non-ASCII: use the UTF-8 form when the interpreter has made one.
    uint64_t utf8 = 0, utf8_length = 0;
    if (!Read(pid, obj + l->compact_utf8, &utf8, 8) || !Read(pid, obj + l->compact_utf8_length, &utf8_length, 8))
      return false;
    if (!utf8) {
      *out = "<non-ascii>";
      return true;
    }
    text = utf8;
    length = utf8_length;
  } else {
    *out = "<str>";
    return true;
  }
  length = std::min<uint64_t>(length, 4096);
  out->resize(length);
  return length == 0 || Read(pid, text, out->data(), length);
}

uint64_t PythonStacks::FindThreadState(pid_t pid, uint64_t runtime, uint32_t tid) {
  const StrataPyLayout* l = Layout();
  uint64_t key = (uint64_t{static_cast<uint32_t>(pid)} << 32) | tid;
  auto it = tstates_.find(key);
  if (it != tstates_.end()) {
    uint64_t native = 0;
    if (Read(pid, it->second + l->tstate_native_thread_id, &native, 8) && native == tid) return it->second;
    tstates_.erase(it);
  }
  uint64_t interp = 0, ts = 0;
  if (!Read(pid, runtime + l->runtime_interpreters_head, &interp, 8) || !interp) return 0;
  if (!Read(pid, interp + l->interp_threads_head, &ts, 8)) return 0;
  size_t span = std::max({l->tstate_next, l->tstate_native_thread_id, l->tstate_cframe}) + 8;
  std::vector<uint8_t> buf(span);
  for (int guard = 0; ts && guard < 4096; ++guard) {
    if (!Read(pid, ts, buf.data(), span)) return 0;
    uint64_t native = U64At(buf, l->tstate_native_thread_id);
    if (native != 0) tstates_[(uint64_t{static_cast<uint32_t>(pid)} << 32) | native] = ts;
    if (native == tid) return ts;
    ts = U64At(buf, l->tstate_next);
  }
  return 0;
}

bool PythonStacks::ReadStack(pid_t pid, uint64_t runtime, uint32_t tid, std::vector<PythonFrame>* out) {
  const StrataPyLayout* l = Layout();
  if (!l || !runtime) return false;
  uint64_t ts = FindThreadState(pid, runtime, tid);
  if (!ts) return false;
  uint64_t cframe = 0, frame = 0;
  if (!Read(pid, ts + l->tstate_cframe, &cframe, 8) || !cframe ||
      !Read(pid, cframe + l->cframe_current_frame, &frame, 8)) {
    ++failures_;
    return false;
  }
  size_t fspan = std::max({l->frame_code, l->frame_previous, l->frame_owner}) + 8;
  size_t cspan = std::max({l->code_filename, l->code_qualname, l->code_firstlineno}) + 8;
  std::vector<uint8_t> fb(fspan), cb(cspan);
  for (size_t depth = 0; frame && depth < kMaxDepth; ++depth) {
    if (!Read(pid, frame, fb.data(), fspan)) {
      ++failures_;
      return !out->empty();
    }
    uint64_t code = U64At(fb, l->frame_code);
    if (!code || !Read(pid, code, cb.data(), cspan)) {
      ++failures_;
      return !out->empty();
    }
    uint64_t qualname = U64At(cb, l->code_qualname), filename = U64At(cb, l->code_filename);
    int32_t first;
    std::memcpy(&first, cb.data() + l->code_firstlineno, 4);
    // A code object's address can be reused after it is freed: the cache entry
    // stands only while its name objects and first line are the same.
    Code& c = codes_[(uint64_t{static_cast<uint32_t>(pid)} << 48) ^ code];
    if (c.qualname != qualname || c.filename != filename || c.firstlineno != first) {
      c.qualname = qualname;
      c.filename = filename;
      c.firstlineno = first;
      if (!ReadString(pid, qualname, &c.function)) c.function = "<unknown>";
      if (!ReadString(pid, filename, &c.file)) c.file = "<unknown>";
    }
    out->push_back({c.function, c.file, static_cast<uint32_t>(std::max(first, 0))});
    frame = U64At(fb, l->frame_previous);
  }
  return !out->empty();
}

void PythonStacks::Forget(pid_t pid) {
  for (auto it = tstates_.begin(); it != tstates_.end();)
    it = (it->first >> 32) == static_cast<uint32_t>(pid) ? tstates_.erase(it) : std::next(it);
  for (auto it = codes_.begin(); it != codes_.end();)
    it = (it->first >> 48) == (static_cast<uint32_t>(pid) & 0xffff) ? codes_.erase(it) : std::next(it);
}

}  // namespace strata::collectors::os

#include "collectors/os/python_stacks.h"

#include <sys/uio.h>

#include <algorithm>
#include <cstring>

#include "collectors/os/python_layout.h"

namespace strata::collectors::os {
namespace {

uint64_t U64At(const std::vector<uint8_t>& b, size_t off) {
  uint64_t v = 0;
  if (off + 8 <= b.size()) std::memcpy(&v, b.data() + off, 8);
  return v;
}

constexpr size_t kMaxDepth = 256;

}  // namespace

bool PythonStacks::Supported() { return kStrataPyLayoutCount > 0; }

namespace {

// RFC 3629 UTF-8 without NULs: no overlong forms, no surrogates, nothing above U+10FFFF.
bool ValidUtf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c == 0) return false;
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t n = 0;
    uint32_t cp = 0;
    if ((c >> 5) == 0x6) n = 1, cp = c & 0x1f;
    else if ((c >> 4) == 0xe) n = 2, cp = c & 0x0f;
    else if ((c >> 3) == 0x1e) n = 3, cp = c & 0x07;
    else return false;
    if (i + n >= s.size()) return false;
    for (size_t k = 1; k <= n; ++k) {
      auto d = static_cast<unsigned char>(s[i + k]);
      if ((d >> 6) != 0x2) return false;
      cp = (cp << 6) | (d & 0x3f);
    }
    if ((n == 1 && cp < 0x80) || (n == 2 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
        (n == 3 && (cp < 0x10000 || cp > 0x10ffff)))
      return false;
    i += n + 1;
  }
  return true;
}

}  // namespace

std::string PythonStacks::VersionName(uint32_t version_hex) {
  return std::to_string(version_hex >> 24) + "." + std::to_string((version_hex >> 16) & 0xff);
}

std::string PythonStacks::SupportedVersions() {
  std::string s;
  for (size_t i = 0; i < kStrataPyLayoutCount; ++i)
    s += (s.empty() ? "" : i + 1 == kStrataPyLayoutCount ? " and " : ", ") + VersionName(kStrataPyLayouts[i].version_hex);
  return s;
}

const StrataPyLayout* PythonStacks::LayoutOf(pid_t pid) const {
  auto it = layouts_.find(static_cast<uint32_t>(pid));
  return it == layouts_.end() ? nullptr : &it->second;
}

void PythonStacks::Assume(pid_t pid, const StrataPyLayout& layout) { layouts_[static_cast<uint32_t>(pid)] = layout; }

std::string PythonStacks::VersionsSeen() const {
  std::string s;
  for (uint32_t v : seen_) s += (s.empty() ? "" : ", ") + VersionName(v);
  return s;
}

bool PythonStacks::Read(pid_t pid, uint64_t addr, void* buf, size_t n) {
  ++reads_;
  iovec local{buf, n};
  iovec remote{reinterpret_cast<void*>(addr), n};
  return addr != 0 && ::process_vm_readv(pid, &local, 1, &remote, 1, 0) == static_cast<ssize_t>(n);
}

// CPython 3.13+ describes its own layout at the start of _PyRuntime
// (_Py_DebugOffsets, for debuggers and profilers): where it is there, it is
// what the interpreter was built with, so it overrides the typed-in table.
// The positions below are those of 3.13's _Py_DebugOffsets (Include/internal/
// pycore_runtime.h), which CPython keeps within a minor release.
namespace {
struct DebugOffsetsField {
  size_t at;                        // where _Py_DebugOffsets holds the offset
  size_t StrataPyLayout::*field;    // the layout field it gives
};
constexpr DebugOffsetsField kDebugOffsets313[] = {
    {40, &StrataPyLayout::runtime_interpreters_head},  {72, &StrataPyLayout::interp_threads_head},
    {168, &StrataPyLayout::tstate_next},               {184, &StrataPyLayout::tstate_cframe},
    {200, &StrataPyLayout::tstate_native_thread_id},   {232, &StrataPyLayout::frame_previous},
    {240, &StrataPyLayout::frame_code},                {248, &StrataPyLayout::frame_prev_instr},
    {264, &StrataPyLayout::frame_owner},               {280, &StrataPyLayout::code_filename},
    {296, &StrataPyLayout::code_qualname},             {304, &StrataPyLayout::code_linetable},
    {312, &StrataPyLayout::code_firstlineno},          {344, &StrataPyLayout::code_code_adaptive},
    {360, &StrataPyLayout::object_type},               {520, &StrataPyLayout::bytes_size},
    {528, &StrataPyLayout::bytes_sval},                {544, &StrataPyLayout::ascii_state},
    {552, &StrataPyLayout::ascii_length},              {560, &StrataPyLayout::ascii_size},
};
constexpr size_t kDebugOffsets313Size = 568;
}  // namespace

bool PythonStacks::DebugOffsetPositions(uint32_t version_hex, StrataPyLayout* positions, size_t* bytes) {
  if ((version_hex >> 16) != 0x030d) return false;
  *positions = StrataPyLayout{};
  for (const DebugOffsetsField& f : kDebugOffsets313) positions->*f.field = f.at;
  *bytes = kDebugOffsets313Size;
  return true;
}

bool PythonStacks::FromDebugOffsets(pid_t pid, uint64_t runtime, StrataPyLayout* l) {
  if ((l->version_hex >> 16) != 0x030d) return true;  // 3.11 and 3.12 have none
  std::vector<uint8_t> d(kDebugOffsets313Size);
  if (!Read(pid, runtime, d.data(), d.size())) return false;
  uint64_t version = U64At(d, 8);
  if (std::memcmp(d.data(), "xdebugpy", 8) != 0 || (version >> 16) != (l->version_hex >> 16)) return false;
  for (const DebugOffsetsField& f : kDebugOffsets313) {
    uint64_t v = U64At(d, f.at);
    if (v > (1u << 16)) return false;  // not an offset into one of these structs
    l->*f.field = static_cast<size_t>(v);
  }
  // A compact str's UTF-8 fields follow its PyASCIIObject header.
  l->compact_utf8_length = l->ascii_size;
  l->compact_utf8 = l->ascii_size + 8;
  l->compact_size = l->ascii_size + 16;
  return true;
}

uint64_t PythonStacks::FindRuntime(pid_t pid, const AddressSpace& as, Symbolizer* sym, std::string* why) {
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
    const StrataPyLayout* l = StrataPythonLayout(version);
    if (!l) {
      if (why) *why = base + ": Python " + VersionName(version) + " (strata reads " + SupportedVersions() + ")";
      return 0;
    }
    StrataPyLayout layout = *l;
    if (!FromDebugOffsets(pid, runtime + bias, &layout)) {
      if (why) *why = base + ": Python " + VersionName(version) + " whose _PyRuntime.debug_offsets do not match strata's";
      return 0;
    }
    layouts_[static_cast<uint32_t>(pid)] = layout;
    seen_.insert(version & 0xffff0000u);
    auto type = [&](const char* name) {
      uint64_t a = s->SymbolAddress(name);
      return a ? a + bias : 0;
    };
    types_[static_cast<uint32_t>(pid)] = {type("PyCode_Type"), type("PyUnicode_Type"), type("PyBytes_Type")};
    return runtime + bias;
  }
  return 0;
}

bool PythonStacks::IsA(pid_t pid, uint64_t obj, uint64_t Types::*type) {
  auto it = types_.find(static_cast<uint32_t>(pid));
  if (it == types_.end() || it->second.*type == 0) return true;  // cannot tell
  uint64_t t = 0;
  return Read(pid, obj + LayoutOf(pid)->object_type, &t, 8) && t == it->second.*type;
}

void PythonStacks::Inherit(pid_t child, pid_t parent) {
  auto it = types_.find(static_cast<uint32_t>(parent));
  if (it != types_.end()) types_[static_cast<uint32_t>(child)] = it->second;
  auto l = layouts_.find(static_cast<uint32_t>(parent));
  if (l != layouts_.end()) layouts_[static_cast<uint32_t>(child)] = l->second;
}

bool PythonStacks::ReadString(pid_t pid, uint64_t obj, std::string* out) {
  const StrataPyLayout* l = LayoutOf(pid);
  if (!IsA(pid, obj, &Types::str)) return false;
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
  if (length > 0 && !Read(pid, text, out->data(), length)) return false;
  // The object is read while the program runs: one freed and reused meanwhile
  // reads as garbage. A name that is not the text it claims to be (ASCII, or
  // UTF-8) is not recorded: traces carry valid UTF-8 only.
  if (compact && ascii)
    return std::all_of(out->begin(), out->end(), [](char ch) {
      auto u = static_cast<unsigned char>(ch);
      return u != 0 && u < 0x80;
    });
  return ValidUtf8(*out);
}

uint64_t PythonStacks::FindThreadState(pid_t pid, uint64_t runtime, uint32_t tid) {
  const StrataPyLayout* l = LayoutOf(pid);
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

// ---- location tables (CPython 3.11, Objects/locations.md) ----

namespace {

// Each entry starts with a byte 1CCCCLLL: code C, and L+1 code units covered.
// Codes 13 and 14 carry a signed varint line delta, 10-12 a delta of C-10,
// 15 means "no line", the rest stay on the line.
uint32_t ScanVarint(std::string_view t, size_t* i) {
  uint32_t v = 0;
  for (unsigned shift = 0; *i < t.size() && shift < 32; shift += 6) {
    auto b = static_cast<uint8_t>(t[(*i)++]);
    v |= static_cast<uint32_t>(b & 63) << shift;
    if (!(b & 64)) break;
  }
  return v;
}

int32_t LineDelta(std::string_view t, size_t i) {
  int code = (static_cast<uint8_t>(t[i]) >> 3) & 15;
  if (code == 13 || code == 14) {
    ++i;
    uint32_t u = ScanVarint(t, &i);
    return (u & 1) ? -static_cast<int32_t>(u >> 1) : static_cast<int32_t>(u >> 1);
  }
  if (code >= 10 && code <= 12) return code - 10;
  return 0;
}

}  // namespace

int32_t PythonLineAt(std::string_view t, int32_t first_line, int64_t offset) {
  if (offset < 0) return first_line;
  int32_t line = first_line;
  int64_t end = 0;  // byte offset where the current entry's range ends
  size_t i = 0;
  while (i < t.size()) {
    auto b = static_cast<uint8_t>(t[i]);
    if (!(b & 128)) {  // not an entry start: the table is damaged
      ++i;
      continue;
    }
    line += LineDelta(t, i);
    bool no_line = (b >> 3) == 0x1f;
    end += ((b & 7) + 1) * 2;  // code units are 2 bytes
    if (offset < end) return no_line ? -1 : line;
    do {
      ++i;
    } while (i < t.size() && !(static_cast<uint8_t>(t[i]) & 128));
  }
  return -1;
}

bool PythonStacks::ReadBytes(pid_t pid, uint64_t obj, std::string* out) {
  const StrataPyLayout* l = LayoutOf(pid);
  int64_t size = 0;
  if (!obj || !IsA(pid, obj, &Types::bytes) || !Read(pid, obj + l->bytes_size, &size, 8) || size < 0 ||
      size > (1 << 20))
    return false;
  out->resize(static_cast<size_t>(size));
  return size == 0 || Read(pid, obj + l->bytes_sval, out->data(), out->size());
}

const PythonStacks::Code* PythonStacks::CodeAt(pid_t pid, uint64_t code) {
  const StrataPyLayout* l = LayoutOf(pid);
  if (!l) return nullptr;
  size_t span = std::max({l->object_type, l->code_filename, l->code_qualname, l->code_firstlineno, l->code_linetable}) + 8;
  code_buf_.resize(span);
  uint64_t key = (uint64_t{static_cast<uint32_t>(pid)} << 48) ^ code;
  if (!code || !Read(pid, code, code_buf_.data(), span)) {
    // The process has exited since the sample (its last milliseconds reach
    // the encoder after it is gone): what this code object was is still known.
    auto it = codes_.find(key);
    if (code && it != codes_.end() && it->second.named) return &it->second;
    ++failures_;
    return nullptr;
  }
  auto types = types_.find(static_cast<uint32_t>(pid));
  if (types != types_.end() && types->second.code && U64At(code_buf_, l->object_type) != types->second.code) {
    ++failures_;  // freed since the sample, its memory reused
    return nullptr;
  }
  uint64_t qualname = U64At(code_buf_, l->code_qualname), filename = U64At(code_buf_, l->code_filename),
           linetable = U64At(code_buf_, l->code_linetable);
  int32_t first;
  std::memcpy(&first, code_buf_.data() + l->code_firstlineno, 4);
  // A code object's address can be reused after it is freed: the cache entry
  // stands only while its name objects, table and first line are the same.
  Code& c = codes_[key];
  if (!c.named || c.qualname != qualname || c.filename != filename || c.linetable != linetable ||
      c.firstlineno != first) {
    c.qualname = qualname;
    c.filename = filename;
    c.linetable = linetable;
    c.firstlineno = first;
    c.named = true;
    if (!ReadString(pid, qualname, &c.function)) c.function = "<unknown>";
    if (!ReadString(pid, filename, &c.file)) c.file = "<unknown>";
    if (!ReadBytes(pid, linetable, &c.table)) c.table.clear();
  }
  return &c;
}

PythonFrame PythonStacks::FrameOf(pid_t pid, uint64_t code, uint64_t prev_instr) {
  const Code* c = CodeAt(pid, code);
  if (!c) return {"<unknown>", "<unknown>", 0, 0};
  PythonFrame f{c->function, c->file, 0, static_cast<uint32_t>(std::max(c->firstlineno, 0))};
  // prev_instr is the code unit before the next instruction: the call a caller
  // frame waits in, the instruction the innermost one runs. Before the first
  // instruction (a frame being set up) it points below the code.
  uint64_t base = code + LayoutOf(pid)->code_code_adaptive;
  int64_t offset = prev_instr >= base ? static_cast<int64_t>(prev_instr - base) : -1;
  int32_t line = offset > (int64_t{1} << 30) ? -1 : PythonLineAt(c->table, c->firstlineno, offset);
  f.line = line > 0 ? static_cast<uint32_t>(line) : f.first_line;
  return f;
}

void PythonStacks::Resolve(pid_t pid, const PythonRawFrame* frames, size_t n, std::vector<PythonFrame>* out) {
  for (size_t i = 0; i < n; ++i)
    if (!(frames[i].code & 1)) out->push_back(FrameOf(pid, frames[i].code, frames[i].prev_instr));  // bit 0: a shim
}

bool PythonStacks::ReadStack(pid_t pid, uint64_t runtime, uint32_t tid, std::vector<PythonFrame>* out) {
  const StrataPyLayout* l = LayoutOf(pid);
  if (!l || !runtime) return false;
  uint64_t ts = FindThreadState(pid, runtime, tid);
  if (!ts) return false;
  uint64_t cframe = 0, frame = 0;
  if (!Read(pid, ts + l->tstate_cframe, &cframe, 8) || !cframe) {
    ++failures_;
    return false;
  }
  if (l->current_frame_direct) {
    frame = cframe;
  } else if (!Read(pid, cframe + l->cframe_current_frame, &frame, 8)) {
    ++failures_;
    return false;
  }
  size_t fspan = std::max({l->frame_code, l->frame_previous, l->frame_owner, l->frame_prev_instr}) + 8;
  std::vector<uint8_t> fb(fspan);
  for (size_t depth = 0; frame && depth < kMaxDepth; ++depth) {
    if (!Read(pid, frame, fb.data(), fspan)) {
      ++failures_;
      return !out->empty();
    }
    uint64_t code = U64At(fb, l->frame_code);
    if (!code) {
      ++failures_;
      return !out->empty();
    }
    // 3.12+: the shim frame of each entry into the interpreter from C is not
    // the program's code.
    if (fb[l->frame_owner] != l->cstack_owner) out->push_back(FrameOf(pid, code, U64At(fb, l->frame_prev_instr)));
    frame = U64At(fb, l->frame_previous);
  }
  return !out->empty();
}

void PythonStacks::Forget(pid_t pid) {
  types_.erase(static_cast<uint32_t>(pid));
  layouts_.erase(static_cast<uint32_t>(pid));
  for (auto it = tstates_.begin(); it != tstates_.end();)
    it = (it->first >> 32) == static_cast<uint32_t>(pid) ? tstates_.erase(it) : std::next(it);
  for (auto it = codes_.begin(); it != codes_.end();)
    it = (it->first >> 48) == (static_cast<uint32_t>(pid) & 0xffff) ? codes_.erase(it) : std::next(it);
}

}  // namespace strata::collectors::os

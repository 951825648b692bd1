// The memory image fuzz_python_stacks decodes, and the builder make_fuzz_seeds
// writes seeds with: a CPython 3.11 interpreter's structures laid out with the
// offsets of collectors/os/python_layout.h, at a fixed address.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "collectors/os/python_layout.h"

namespace strata::fuzz {

// A canonical user-space address no library or allocator of the fuzz target
// takes (the target maps it with MAP_FIXED_NOREPLACE and aborts otherwise).
inline constexpr uint64_t kPyImageBase = 0x5f0000000000ull;
inline constexpr size_t kPyImageSize = 1 << 20;

class PyImage {
 public:
  explicit PyImage(const StrataPyLayout& l) : l_(l), bytes_(64, 0) {}

  // Bump-allocates `n` zeroed bytes, 16-aligned; returns their absolute address.
  uint64_t Alloc(size_t n) {
    size_t at = (bytes_.size() + 15) & ~size_t{15};
    bytes_.resize(at + n, 0);
    return kPyImageBase + at;
  }
  void Put64(uint64_t addr, uint64_t v) { Put(addr, &v, 8); }
  void Put32(uint64_t addr, uint32_t v) { Put(addr, &v, 4); }
  void Put(uint64_t addr, const void* p, size_t n) { std::memcpy(&bytes_[addr - kPyImageBase], p, n); }

  // A str object: compact ASCII (text inline) or compact non-ASCII with its UTF-8 copy.
  uint64_t Str(const std::string& s) {
    bool ascii = true;
    for (unsigned char c : s) ascii = ascii && c < 0x80;
    uint64_t o = Alloc((ascii ? l_.ascii_size : l_.compact_size) + s.size() + 1);
    Put64(o + l_.ascii_length, s.size());
    // state: interned 0-1, kind 2-4 (1: one byte per char), compact 5, ascii 6.
    Put32(o + l_.ascii_state, (1u << 2) | (1u << 5) | (ascii ? 1u << 6 : 0));
    if (ascii) {
      Put(o + l_.ascii_size, s.data(), s.size());
    } else {
      uint64_t utf8 = Alloc(s.size() + 1);
      Put(utf8, s.data(), s.size());
      Put64(o + l_.compact_utf8, utf8);
      Put64(o + l_.compact_utf8_length, s.size());
    }
    return o;
  }
  uint64_t Code(const std::string& qualname, const std::string& file, int32_t line) {
    uint64_t c = Alloc(std::max({l_.code_filename, l_.code_qualname, l_.code_firstlineno}) + 8);
    Put64(c + l_.code_qualname, Str(qualname));
    Put64(c + l_.code_filename, Str(file));
    Put32(c + l_.code_firstlineno, static_cast<uint32_t>(line));
    return c;
  }
  // A frame chain, innermost first; returns the innermost frame.
  uint64_t Frames(const std::vector<uint64_t>& codes) {
    uint64_t previous = 0;
    size_t span = std::max({l_.frame_code, l_.frame_previous, l_.frame_owner}) + 8;
    for (size_t i = codes.size(); i-- > 0;) {
      uint64_t f = Alloc(span);
      Put64(f + l_.frame_code, codes[i]);
      Put64(f + l_.frame_previous, previous);
      previous = f;
    }
    return previous;
  }
  // A thread state whose current frame is `frame`, linked after `next`.
  uint64_t Thread(uint64_t native_tid, uint64_t frame, uint64_t next) {
    uint64_t ts = Alloc(std::max({l_.tstate_next, l_.tstate_native_thread_id, l_.tstate_cframe}) + 8);
    uint64_t cframe = Alloc(l_.cframe_current_frame + 8);
    Put64(cframe + l_.cframe_current_frame, frame);
    Put64(ts + l_.tstate_next, next);
    Put64(ts + l_.tstate_native_thread_id, native_tid);
    Put64(ts + l_.tstate_cframe, cframe);
    return ts;
  }
  // _PyRuntime and its interpreter, whose thread list starts at `threads`;
  // the image's header asks for thread `tid`.
  void Runtime(uint64_t threads, uint32_t tid) {
    uint64_t rt = Alloc(l_.runtime_interpreters_head + 8);
    uint64_t interp = Alloc(l_.interp_threads_head + 8);
    Put64(rt + l_.runtime_interpreters_head, interp);
    Put64(interp + l_.interp_threads_head, threads);
    std::memcpy(&bytes_[0], &tid, 4);
    auto off = static_cast<uint32_t>(rt - kPyImageBase);
    std::memcpy(&bytes_[4], &off, 4);
  }
  const std::vector<uint8_t>& bytes() const { return bytes_; }

 private:
  const StrataPyLayout& l_;
  std::vector<uint8_t> bytes_;
};

}  // namespace strata::fuzz

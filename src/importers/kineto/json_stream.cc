#include "importers/kineto/json_stream.h"

#include <simdjson.h>

#include <algorithm>
#include <cstring>
#include <memory>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "base/error.h"

namespace strata::importers::kineto {
namespace {

inline bool IsWs(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

// Classifies 64 input bytes at once into bit masks (bit i = byte i), the way
// simdjson's first stage does: quotes, backslashes, openers ({ [) and closers (} ]).
struct BlockMasks {
  uint64_t quote, backslash, open, close;
};

inline BlockMasks Classify64(const char* p) {
  BlockMasks m;
#if defined(__SSE2__)
  uint64_t q = 0, bs = 0, op = 0, cl = 0;
  const __m128i kQuote = _mm_set1_epi8('"'), kBs = _mm_set1_epi8('\\');
  const __m128i kOpen = _mm_set1_epi8('{'), kClose = _mm_set1_epi8('}'), k20 = _mm_set1_epi8(0x20);
  for (int i = 0; i < 4; ++i) {
    __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * i));
    // '[' | 0x20 == '{' and ']' | 0x20 == '}': one compare finds both kinds.
    __m128i f = _mm_or_si128(v, k20);
    int sh = 16 * i;
    q |= uint64_t{static_cast<uint16_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(v, kQuote)))} << sh;
    bs |= uint64_t{static_cast<uint16_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(v, kBs)))} << sh;
    op |= uint64_t{static_cast<uint16_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(f, kOpen)))} << sh;
    cl |= uint64_t{static_cast<uint16_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(f, kClose)))} << sh;
  }
  m = {q, bs, op, cl};
#else
  m = {0, 0, 0, 0};
  for (int i = 0; i < 64; ++i) {
    uint64_t bit = uint64_t{1} << i;
    char c = p[i];
    if (c == '"') m.quote |= bit;
    else if (c == '\\') m.backslash |= bit;
    else if (c == '{' || c == '[') m.open |= bit;
    else if (c == '}' || c == ']') m.close |= bit;
  }
#endif
  return m;
}

// Bit i of the result is the XOR of bits 0..i: 1 inside a string given the quote positions.
inline uint64_t PrefixXor(uint64_t x) {
  x ^= x << 1;
  x ^= x << 2;
  x ^= x << 4;
  x ^= x << 8;
  x ^= x << 16;
  x ^= x << 32;
  return x;
}

// One block of n (<= 64) bytes at p, with the state carried from the block
// before: its masks limited to the n bytes, quotes escaped by backslashes
// removed, and `inside` marking the bytes within strings. Updates escape_next
// for the next block (the caller carries in_string from `inside`'s last bit).
struct Block {
  BlockMasks m;
  uint64_t valid, inside;
};

inline Block ClassifyBlock(const char* p, size_t n, bool in_string, bool& escape_next) {
  Block b;
  b.valid = n == 64 ? ~uint64_t{0} : (uint64_t{1} << n) - 1;
  b.m = Classify64(p);
  b.m.quote &= b.valid;
  b.m.backslash &= b.valid;
  if (b.m.backslash != 0 || escape_next) {
    // Rare: find the escaped bytes one by one (a run of backslashes escapes every other one).
    uint64_t escaped = 0;
    bool esc = escape_next;
    for (size_t i = 0; i < n; ++i) {
      if (esc) {
        escaped |= uint64_t{1} << i;
        esc = false;
      } else if (p[i] == '\\') {
        esc = true;
      }
    }
    escape_next = esc;
    b.m.quote &= ~escaped;
  }
  b.inside = PrefixXor(b.m.quote) ^ (in_string ? ~uint64_t{0} : 0);
  return b;
}

// Finds where one JSON value ends, resumably: Scan() returns false when the
// window ends first, and continues from where it stopped once more bytes are in.
struct ValueScanner {
  size_t pos = 0;           // next byte to look at
  int depth = 0;
  bool in_string = false;
  bool escape_next = false;  // the previous window ended inside a backslash escape
  bool scalar = false;
  bool string_value = false;
  bool started = false;

  void Start(size_t at) {
    pos = at;
    depth = 0;
    in_string = false;
    escape_next = false;
    scalar = false;
    string_value = false;
    started = false;
  }
  void Shift(size_t delta) {
    pos -= delta;
  }
  // True when the value is complete; pos is then one past its last byte.
  bool Scan(const char* buf, size_t end) {
    if (!started) {
      started = true;
      char c = buf[pos];
      if (c == '"') {
        string_value = true;
        ++pos;
      } else if (c != '{' && c != '[') {
        scalar = true;
      }
    }
    if (string_value) {  // member names and top-level strings: short, scalar
      for (; pos < end; ++pos) {
        if (escape_next) {
          escape_next = false;
        } else if (buf[pos] == '\\') {
          escape_next = true;
        } else if (buf[pos] == '"') {
          ++pos;
          return true;
        }
      }
      return false;
    }
    if (scalar) {
      while (pos < end) {
        char c = buf[pos];
        if (c == ',' || c == '}' || c == ']' || IsWs(c)) return true;
        ++pos;
      }
      return false;
    }
    // 64 bytes per step: strings are masked out with a prefix XOR over the
    // unescaped quotes, then the remaining brackets move the depth. Needs 64
    // readable bytes at buf + pos (the window keeps that much padding).
    while (pos < end) {
      size_t n = std::min<size_t>(64, end - pos);
      Block b = ClassifyBlock(buf + pos, n, in_string, escape_next);
      const BlockMasks& m = b.m;
      uint64_t valid = b.valid, inside = b.inside;
      uint64_t brackets = (m.open | m.close) & ~inside & valid;
      while (brackets) {
        int i = __builtin_ctzll(brackets);
        uint64_t bit = uint64_t{1} << i;
        if (m.open & bit) {
          ++depth;
        } else if (--depth == 0) {
          pos += static_cast<size_t>(i) + 1;
          in_string = false;
          escape_next = false;
          return true;
        }
        brackets &= brackets - 1;
      }
      in_string = (inside >> (n - 1)) & 1;
      pos += n;
    }
    return false;
  }
};

// Without -mpopcnt (the default x86-64 target) __builtin_popcountll is a call
// into libgcc's table lookup, which was 3% of an import; this is inline.
inline int PopCount(uint64_t x) {
#if defined(__POPCNT__)
  return __builtin_popcountll(x);
#else
  x -= (x >> 1) & 0x5555555555555555ull;
  x = (x & 0x3333333333333333ull) + ((x >> 2) & 0x3333333333333333ull);
  x = (x + (x >> 4)) & 0x0F0F0F0F0F0F0F0Full;
  return static_cast<int>((x * 0x0101010101010101ull) >> 56);
#endif
}

// Finds where the elements of the events array end, 64 bytes at a time, over
// a whole window in one pass: a batch is every element that closes before the
// window's end. Only strings and brackets are tracked; simdjson validates the rest.
struct ElementScanner {
  size_t pos = 0;        // next byte to classify
  int64_t depth = 0;     // 0 between elements
  bool in_string = false;
  bool escape_next = false;  // the window ended inside a backslash escape
  size_t last_end = 0;   // one past the last element that closed (0: none yet)
  size_t array_end = 0;  // the closer that took the depth below 0, when Scan returned true

  void Start(size_t at) {
    pos = at;
    depth = 0;
    in_string = false;
    escape_next = false;
    last_end = 0;
  }
  void Shift(size_t delta) {
    pos = pos >= delta ? pos - delta : 0;
    last_end = last_end >= delta ? last_end - delta : 0;
  }
  // Scans [pos, end); true when the array's own closer was found (at array_end).
  // With first_only it stops after the first element that closes (pos is then
  // one past it). Needs 64 readable bytes at buf + pos (the window keeps that much padding).
  bool Scan(const char* buf, size_t end, bool first_only = false) {
    while (pos < end) {
      size_t n = std::min<size_t>(64, end - pos);
      Block b = ClassifyBlock(buf + pos, n, in_string, escape_next);
      const BlockMasks& m = b.m;
      uint64_t valid = b.valid, inside = b.inside;
      uint64_t open = m.open & ~inside & valid, close = m.close & ~inside & valid;
      // Depth only reaches 0 in this block if it has at least `depth` closers.
      int closers = PopCount(close);
      if (closers < depth) {
        depth += PopCount(open) - closers;
      } else {
        uint64_t brackets = open | close;
        while (brackets) {
          int i = __builtin_ctzll(brackets);
          uint64_t bit = uint64_t{1} << i;
          if (open & bit) {
            ++depth;
          } else if (--depth <= 0) {
            if (depth < 0) {
              array_end = pos + static_cast<size_t>(i);
              return true;
            }
            last_end = pos + static_cast<size_t>(i) + 1;
            if (first_only) {
              // Resumes after the element, whose last byte was a closer outside strings.
              pos = last_end;
              in_string = false;
              escape_next = false;
              return false;
            }
          }
          brackets &= brackets - 1;
        }
      }
      in_string = (inside >> (n - 1)) & 1;
      pos += n;
    }
    return false;
  }
};

class Streamer {
 public:
  Streamer(ByteSource& src, JsonEventSink& sink, const JsonStreamOptions& opt)
      : src_(src), sink_(sink), opt_(opt), cap_(std::max<size_t>(opt.window, 4096)) {
    buf_.reset(new char[cap_ + 2 + simdjson::SIMDJSON_PADDING]);
  }

  Status Run() {
    STRATA_RETURN_IF_ERROR(Fill(1));
    // A UTF-8 byte order mark is allowed before the document.
    if (end_ - pos_ >= 3 && std::memcmp(buf_.get() + pos_, "\xEF\xBB\xBF", 3) == 0) pos_ += 3;
    STRATA_ASSIGN_OR_RETURN(char c, NextNonWs());
    if (c == '[') {
      ++pos_;
      STRATA_RETURN_IF_ERROR(Events());
      saw_events_ = true;
    } else if (c == '{') {
      ++pos_;
      STRATA_RETURN_IF_ERROR(Members());
    } else {
      return Err(StatusCode::kInvalidArgument, "not a JSON trace: byte {} is '{}', expected '{{' or '['", Offset(pos_),
                 Printable(c));
    }
    // Only whitespace may follow the document.
    auto tail = NextNonWs();
    if (tail.ok()) return Err(StatusCode::kCorrupt, "invalid JSON: unexpected '{}' after the end of the document at byte {}",
                              Printable(*tail), Offset(pos_));
    if (!saw_events_) return Err(StatusCode::kInvalidArgument, "not a trace: the JSON object has no \"traceEvents\" array");
    return OkStatus();
  }

 private:
  static std::string Printable(char c) {
    if (c >= 0x20 && c < 0x7f) return std::string(1, c);
    return fmt::format("\\x{:02x}", static_cast<unsigned char>(c));
  }
  uint64_t Offset(size_t p) const { return base_ + (p - 1); }

  // Keeps [keep, end_) (moved to the front) and reads more. Grows the window
  // when nothing can be dropped (one event larger than the window).
  Status Fill(size_t keep) {
    if (eof_) return OkStatus();
    if (keep > 1) {
      size_t delta = keep - 1;
      std::memmove(buf_.get() + 1, buf_.get() + keep, end_ - keep);
      end_ -= delta;
      pos_ -= delta;
      elem_start_ = elem_start_ >= delta ? elem_start_ - delta : 0;
      batch_start_ = batch_start_ >= delta ? batch_start_ - delta : 0;
      scan_.Shift(delta);
      escan_.Shift(delta);
      base_ += delta;
    }
    if (end_ == cap_ + 1) {
      size_t ncap = cap_ * 2;
      std::unique_ptr<char[]> nb(new char[ncap + 2 + simdjson::SIMDJSON_PADDING]);
      std::memcpy(nb.get(), buf_.get(), end_);
      buf_ = std::move(nb);
      cap_ = ncap;
    }
    while (end_ < cap_ + 1) {
      STRATA_ASSIGN_OR_RETURN(size_t n, src_.Read(buf_.get() + end_, cap_ + 1 - end_));
      if (n == 0) {
        eof_ = true;
        break;
      }
      end_ += n;
    }
    if (opt_.progress) opt_.progress(src_.consumed(), src_.total());
    return OkStatus();
  }

  // The next non-whitespace byte (not consumed); an error at the end of input.
  StatusOr<char> NextNonWs() {
    for (;;) {
      while (pos_ < end_ && IsWs(buf_[pos_])) ++pos_;
      if (pos_ < end_) return buf_[pos_];
      if (eof_) return Err(StatusCode::kCorrupt, "invalid JSON: input ends at byte {} inside the document", Offset(pos_));
      STRATA_RETURN_IF_ERROR(Fill(pos_));
    }
  }

  // Scans one whole value starting at pos_; on return [start, pos_) is the value.
  Status ScanValue(size_t& start) {
    start = pos_;
    scan_.Start(pos_);
    elem_start_ = start;
    while (!scan_.Scan(buf_.get(), end_)) {
      if (eof_) return Err(StatusCode::kCorrupt, "invalid JSON: input ends at byte {} inside a value that starts at byte {}",
                           Offset(end_), Offset(elem_start_));
      STRATA_RETURN_IF_ERROR(Fill(elem_start_));
    }
    start = elem_start_;
    pos_ = scan_.pos;
    return OkStatus();
  }

  Status Members() {
    for (bool first = true;; first = false) {
      STRATA_ASSIGN_OR_RETURN(char c, NextNonWs());
      if (c == '}') {
        ++pos_;
        return OkStatus();
      }
      if (!first) {
        if (c != ',') return Err(StatusCode::kCorrupt, "invalid JSON: expected ',' or '}}' at byte {}", Offset(pos_));
        ++pos_;
        STRATA_ASSIGN_OR_RETURN(c, NextNonWs());
      }
      if (c != '"') return Err(StatusCode::kCorrupt, "invalid JSON: expected a member name at byte {}", Offset(pos_));
      size_t kstart;
      STRATA_RETURN_IF_ERROR(ScanValue(kstart));
      std::string key(buf_.get() + kstart + 1, pos_ - kstart - 2);
      STRATA_ASSIGN_OR_RETURN(c, NextNonWs());
      if (c != ':') return Err(StatusCode::kCorrupt, "invalid JSON: expected ':' after \"{}\" at byte {}", key, Offset(pos_));
      ++pos_;
      STRATA_ASSIGN_OR_RETURN(c, NextNonWs());
      if (key == "traceEvents" && c == '[') {
        ++pos_;
        STRATA_RETURN_IF_ERROR(Events());
        saw_events_ = true;
        continue;
      }
      size_t vstart;
      STRATA_RETURN_IF_ERROR(ScanValue(vstart));
      size_t len = pos_ - vstart;
      if (len > kMaxMeta) {
        sink_.Warn(fmt::format("top-level member \"{}\" ({} bytes) ignored: larger than {} bytes", key, len, kMaxMeta));
        continue;
      }
      STRATA_RETURN_IF_ERROR(sink_.Meta(key, std::string_view(buf_.get() + vstart, len)));
    }
  }

  // Hands [start, end) of the window (complete elements and the separators
  // between them) to the sink, framed as one array in place: the byte before
  // the first element becomes '[' and the byte at `end` ']'.
  Status Flush(size_t start, size_t end) {
    char saved = buf_[end];
    buf_[start - 1] = '[';
    buf_[end] = ']';
    size_t len = end - start + 2;
    size_t capacity = (cap_ + 2 + simdjson::SIMDJSON_PADDING) - (start - 1);
    Status st = sink_.Batch(buf_.get() + start - 1, len, capacity, Offset(start));
    buf_[end] = saved;
    return st;
  }

  // The next non-whitespace byte inside the events array (not consumed).
  StatusOr<char> NextInEvents() {
    for (;;) {
      while (pos_ < end_ && IsWs(buf_[pos_])) ++pos_;
      if (pos_ < end_) return buf_[pos_];
      if (eof_)
        return Err(StatusCode::kCorrupt, "invalid JSON: input ends at byte {} inside \"traceEvents\" (truncated file?)",
                   Offset(pos_));
      STRATA_RETURN_IF_ERROR(Fill(pos_));
    }
  }

  Status Events() {
    // The sink reads what events it can straight from the window. From an
    // event it does not take, one pass over the window finds where its last
    // complete element ends; everything before goes to the sink as one batch,
    // the partial element after it moves to the front of the next window.
    for (bool first = true;;) {
      STRATA_ASSIGN_OR_RETURN(char c, NextInEvents());
      if (c == ']') {
        ++pos_;
        return OkStatus();
      }
      if (!first) {
        if (c != ',') return Err(StatusCode::kCorrupt, "invalid JSON: expected ',' or ']' between events at byte {}", Offset(pos_));
        ++pos_;
        STRATA_ASSIGN_OR_RETURN(c, NextInEvents());
      }
      if (c != '{')
        return Err(StatusCode::kCorrupt, "invalid trace: element of \"traceEvents\" at byte {} is not an object", Offset(pos_));
      first = false;
      buf_[end_] = '\0';
      bool at_event = true;
      const char* stop = sink_.FastEvents(buf_.get() + pos_, buf_.get() + end_, &at_event);
      auto at = static_cast<size_t>(stop - buf_.get());
      if (at != pos_) {
        pos_ = at;
        rejected_last_ = false;
        if (!at_event) continue;  // after an event: ',' or ']' next
      }
      batch_start_ = pos_;
      escan_.Start(pos_);
      // An element the sink did not take goes to it alone in a batch, and the
      // sink tries the elements after it again; from a second one in a row on,
      // the rest of the window goes in one batch. An element cut by the
      // window's end goes alone once the window is refilled.
      bool alone = !rejected_last_;
      bool refilled = false;
      for (;;) {
        if (escan_.Scan(buf_.get(), end_, alone || refilled)) {
          size_t q = escan_.array_end;
          if (buf_[q] != ']')
            return Err(StatusCode::kCorrupt, "invalid JSON: unbalanced '{}' at byte {}", Printable(buf_[q]), Offset(q));
          STRATA_RETURN_IF_ERROR(Flush(batch_start_, q));
          pos_ = q + 1;
          return OkStatus();
        }
        if (escan_.last_end != 0) {
          STRATA_RETURN_IF_ERROR(Flush(batch_start_, escan_.last_end));
          pos_ = escan_.last_end;
          if (!refilled) rejected_last_ = true;
          break;  // a separator, then the next batch
        }
        if (eof_)
          return Err(StatusCode::kCorrupt,
                     "invalid JSON: input ends at byte {} inside the event that starts at byte {} (truncated file?)",
                     Offset(end_), Offset(batch_start_));
        STRATA_RETURN_IF_ERROR(Fill(batch_start_));
        refilled = true;
      }
    }
  }

  ByteSource& src_;
  JsonEventSink& sink_;
  const JsonStreamOptions& opt_;
  size_t cap_;
  std::unique_ptr<char[]> buf_;  // buf_[0] is spare so a batch can always be framed with '['
  size_t pos_ = 1, end_ = 1;
  uint64_t base_ = 0;  // input offset of buf_[1]
  bool eof_ = false;
  bool saw_events_ = false;
  ValueScanner scan_;     // top-level members
  ElementScanner escan_;  // the events array
  bool rejected_last_ = false;  // the sink did not take the last element it was offered
  size_t elem_start_ = 0;
  size_t batch_start_ = 0;
};

}  // namespace

Status StreamTraceEvents(ByteSource& src, JsonEventSink& sink, const JsonStreamOptions& opt) {
  Streamer s(src, sink, opt);
  return s.Run();
}

}  // namespace strata::importers::kineto

#include "index/index_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstddef>
#include <cerrno>
#include <cstring>
#include <utility>
#include <filesystem>
#include <memory>
#include <optional>
#include <new>
#include <type_traits>
#include <vector>

#include <xxhash.h>

#include "base/error.h"
#include "base/files.h"
#include "base/huge_pages.h"
#include "base/parallel.h"
#include "index/column_codec.h"

namespace strata::index {
namespace {

constexpr char kMagic[8] = {'S', 'T', 'R', 'A', 'T', 'A', 'I', 'X'};

constexpr uint32_t kSettled = 1;  // Header::flags: stat_sig is settled

struct Header {
  char magic[8];
  uint32_t version;
  uint32_t flags;
  uint64_t key_hi;
  uint64_t key_lo;
  uint64_t payload_size;
  uint64_t model_hash;  // XXH3 of the model's section: [end of the header, lod_offset)
  uint64_t lod_offset;  // where the levels of detail start (from the file's start)
  uint64_t stat_sig;    // StatSignature::hash of the trace's files (in no section's hash)
  uint64_t lod_hash;    // XXH3 of the levels of detail: [lod_offset, end of file)
  uint64_t reserved;
};
static_assert(sizeof(Header) == 80);

template <class T>
struct IsVector : std::false_type {};
template <class T, class A>
struct IsVector<std::vector<T, A>> : std::true_type {};
template <class T>
struct IsColumn : std::false_type {};
template <class T>
struct IsColumn<model::Column<T>> : std::true_type {};
template <class T>
struct IsPair : std::false_type {};
template <class A, class B>
struct IsPair<std::pair<A, B>> : std::true_type {};
// Rows stored as their bytes: numbers, enums, and fixed arrays of numbers.
template <class T>
struct IsRaw : std::bool_constant<std::is_arithmetic_v<T> || std::is_enum_v<T>> {};
template <class T, size_t N>
struct IsRaw<std::array<T, N>> : std::bool_constant<std::is_arithmetic_v<T>> {};

// The model's structures, field by field. A structured binding names every
// member: a member added to a structure without being added here does not
// compile, so the writer and the reader cannot drift from the model.
template <class A>
void Visit(A& a, model::Process& v) {
  auto& [pid, instance, ppid, name, cmdline, start_realtime_ns, rank, is_device, device] = v;
  a(pid, instance, ppid, name, cmdline, start_realtime_ns, rank, is_device, device);
}
template <class A>
void Visit(A& a, model::Track& v) {
  auto& [kind, process, tid, name, device, events, lost] = v;
  a(kind, process, tid, name, device, events, lost);
}
template <class A>
void Visit(A& a, model::CounterSeries& v) {
  auto& [name, process, unit, track] = v;
  a(name, process, unit, track);
}
template <class A>
void Visit(A& a, model::Device& v) {
  auto& [process, id, api, name, vendor, compute_units, clock_khz, memory_bytes, memory_bandwidth, peak_flops_f64,
         peak_flops_f32, peak_flops_f16, compute_major, compute_minor, properties] = v;
  a(process, id, api, name, vendor, compute_units, clock_khz, memory_bytes, memory_bandwidth, peak_flops_f64,
    peak_flops_f32, peak_flops_f16, compute_major, compute_minor, properties);
}
template <class A>
void Visit(A& a, model::Graph& v) {
  auto& [process, name, module, nodes, edges, node_names, node_devices, node_bytes] = v;
  a(process, name, module, nodes, edges, node_names, node_devices, node_bytes);
}
template <class A>
void Visit(A& a, model::OpWindow& v) {
  auto& [process, ts, dur, detail] = v;
  a(process, ts, dur, detail);
}
template <class A>
void Visit(A& a, model::CollectorStatus& v) {
  auto& [process, collector, state, detail] = v;
  a(process, collector, state, detail);
}
template <class A>
void Visit(A& a, model::Trace& v) {
  auto& [source, path, clock_offset_ns, hostname, manifest_json, warnings, source_fractional_us, strings, processes,
         tracks, slices, device, instants, counter_series, counters, flows, args, memory, ops, edges, collectives, graphs,
         op_windows, ops_mode, collectors, devices, thread_states, syscalls, frames, callsites, cpu_samples, page_faults, block_io,
         events_read, events_lost, damaged_packets, damaged_bytes, damaged_events_estimate, device_row_of_slice,
         track_slices] = v;
  a(source, path, clock_offset_ns, hostname, manifest_json, warnings, source_fractional_us, strings, processes, tracks,
    slices, device, instants, counter_series, counters, flows, args, memory, ops, edges, collectives, graphs, op_windows,
    ops_mode, collectors, devices, thread_states, syscalls, frames, callsites, cpu_samples, page_faults, block_io, events_read,
    events_lost, damaged_packets, damaged_bytes, damaged_events_estimate, device_row_of_slice, track_slices);
}

template <class T>
constexpr bool kIsTable = requires(T& t) { t.ForEachColumn([](const char*, auto&) {}); };

// Streams the payload to a file through a buffer, hashing as it goes.
class Writer {
 public:
  // `fd` < 0: counts the bytes a write would take, and writes nothing.
  Writer(int fd, uint64_t offset) : fd_(fd), offset_(offset), state_(fd >= 0 ? XXH3_createState() : nullptr) {
    if (fd_ >= 0) buf_.reserve(1 << 20);
    if (state_) XXH3_64bits_reset(state_);
  }
  ~Writer() { XXH3_freeState(state_); }

  template <class... Ts>
  void operator()(Ts&... vs) {
    (One(vs), ...);
  }
  // Columns written from now on are compressed where that pays
  // (column_codec.h); else raw, to be read in place.
  void SetCompress(bool on) { compress_ = on; }
  // Where the next byte goes, from the start of the file (after an Align).
  uint64_t Offset() {
    Align();
    return offset_ + written_ + buf_.size();
  }
  // Ends a section (each has its own checksum, so that a reader checks only
  // what it reads): the hash of the bytes since the last section ended.
  uint64_t EndSection() {
    Flush();
    uint64_t h = state_ ? XXH3_64bits_digest(state_) : 0;
    if (state_) XXH3_64bits_reset(state_);
    return h;
  }
  // Flushes; returns errno of the first failed write, or 0. `hash`: the last
  // section's.
  int Finish(uint64_t* size, uint64_t* hash) {
    *hash = EndSection();
    *size = written_;
    return state_ || fd_ < 0 ? err_ : ENOMEM;
  }

 private:
  void Bytes(const void* p, size_t n) {
    if (fd_ < 0) {
      written_ += n;
      return;
    }
    const char* c = static_cast<const char*>(p);
    while (n > 0) {
      size_t k = std::min(n, buf_.capacity() - buf_.size());
      buf_.insert(buf_.end(), c, c + k);
      c += k;
      n -= k;
      if (buf_.size() == buf_.capacity()) Flush();
    }
  }
  void Align() {
    static constexpr char kZero[8] = {};
    size_t at = static_cast<size_t>(offset_ + written_ + buf_.size());
    if (at % 8) Bytes(kZero, 8 - at % 8);
  }
  void Flush() {
    if (buf_.empty()) return;
    if (state_) XXH3_64bits_update(state_, buf_.data(), buf_.size());
    if (err_ == 0) err_ = WriteAll(fd_, buf_.data(), buf_.size());
    written_ += buf_.size();
    buf_.clear();
  }
  void Count(size_t n) {
    uint64_t v = n;
    Bytes(&v, sizeof v);
  }
  template <class T>
  void One(T& v) {
    using U = std::remove_const_t<T>;
    if constexpr (IsRaw<U>::value) {
      Bytes(&v, sizeof v);
    } else if constexpr (std::is_same_v<U, std::string>) {
      Count(v.size());
      Bytes(v.data(), v.size());
    } else if constexpr (std::is_same_v<U, model::StringPool>) {
      Count(v.size());
      for (size_t i = 1; i < v.size(); ++i) {
        std::string_view s = v.Get(static_cast<model::StringId>(i));
        Count(s.size());
        Bytes(s.data(), s.size());
      }
    } else if constexpr (IsColumn<U>::value) {
      using E = typename U::value_type;
      Count(v.size());
      // The encoding word goes first: compressed once the codec emits its
      // first bytes, raw if it declines (it then has emitted nothing).
      bool packed = compress_ && codec::EncodeColumn(std::as_const(v).data(), v.size(), sizeof(E), codec::DeltaFor<E>(),
                                                     [this, started = false](const void* p, size_t n) mutable {
                                                       if (!started) Count(static_cast<size_t>(codec::Encoding::kZstd));
                                                       started = true;
                                                       Bytes(p, n);
                                                     });
      if (!packed) {
        Count(static_cast<size_t>(codec::Encoding::kRaw));
        Align();
        Bytes(std::as_const(v).data(), v.size() * sizeof(E));
      }
      Align();
    } else if constexpr (IsVector<U>::value) {
      using E = typename U::value_type;
      Count(v.size());
      if constexpr (IsRaw<E>::value) {
        Align();
        Bytes(v.data(), v.size() * sizeof(E));
        Align();
      } else {
        for (auto& e : v) One(e);
      }
    } else if constexpr (IsPair<U>::value) {
      One(v.first);
      One(v.second);
    } else if constexpr (std::is_same_v<U, LodTable>) {
      const_cast<U&>(v).ForEachColumn([&](const char*, auto& c) { this->One(c); });
      One(v.offsets);
    } else if constexpr (kIsTable<U>) {
      const_cast<U&>(v).ForEachColumn([&](const char*, auto& c) { this->One(c); });
    } else {
      Visit(*this, const_cast<U&>(v));
    }
  }

  int fd_;
  uint64_t offset_;  // of the payload in the file
  uint64_t written_ = 0;
  int err_ = 0;
  bool compress_ = false;
  std::vector<char> buf_;
  XXH3_state_t* state_;
};

// A compressed column's chunk, decoded once the whole layout has been read.
struct DecodeJob {
  codec::ChunkRef chunk;
  size_t row_bytes;
  void* column;
  codec::Transform transform;
  codec::UndeltaFn undelta;
};

// Reads the payload from memory; the first problem stops it.
class Reader {
 public:
  // `owner`: keeps [p, p + n) alive; set, columns are read as views of those
  // bytes instead of copies.
  Reader(const uint8_t* p, size_t n, uint64_t offset, std::shared_ptr<const void> owner = nullptr)
      : begin_(p), p_(p), end_(p + n), offset_(offset), owner_(std::move(owner)) {}

  template <class... Ts>
  void operator()(Ts&... vs) {
    (One(vs), ...);
  }
  bool ok() const { return ok_; }
  bool at_end() const { return p_ == end_; }
  // The compressed columns' chunks, to decode (their columns are sized).
  const std::vector<DecodeJob>& jobs() const { return jobs_; }

 private:
  size_t left() const { return static_cast<size_t>(end_ - p_); }
  bool Bytes(void* out, size_t n) {
    if (!ok_ || n > left()) return ok_ = false;
    if (n) std::memcpy(out, p_, n);
    p_ += n;
    return true;
  }
  void Align() {
    size_t at = static_cast<size_t>(offset_ + (p_ - begin_));
    if (at % 8) {
      size_t k = 8 - at % 8;
      if (k > left()) {
        ok_ = false;
        return;
      }
      p_ += k;
    }
  }
  // A count of things of at least `unit` bytes each that fit in what is left.
  bool Count(size_t unit, size_t* n) {
    uint64_t v = 0;
    if (!Bytes(&v, sizeof v)) return false;
    if (unit > 0 && v > left() / unit) return ok_ = false;
    *n = static_cast<size_t>(v);
    return true;
  }
  template <class T>
  void One(T& v) {
    if (!ok_) return;
    size_t n = 0;
    if constexpr (std::is_same_v<T, bool>) {
      uint8_t b = 0;
      Bytes(&b, 1);
      v = b != 0;  // (any other byte would be no bool at all)
    } else if constexpr (IsRaw<T>::value) {
      Bytes(&v, sizeof v);
    } else if constexpr (std::is_same_v<T, std::string>) {
      if (!Count(1, &n)) return;
      v.assign(reinterpret_cast<const char*>(p_), n);
      p_ += n;
    } else if constexpr (std::is_same_v<T, model::StringPool>) {
      if (!Count(8, &n) || n == 0) return void(ok_ = false);
      if (owner_) {  // views of the mapped bytes; the writer wrote each string once
        std::vector<std::string_view> views;
        views.reserve(n);
        views.emplace_back();
        for (size_t i = 1; i < n && ok_; ++i) {
          size_t len = 0;
          if (!Count(1, &len)) return;
          views.emplace_back(reinterpret_cast<const char*>(p_), len);
          p_ += len;
        }
        if (ok_) v.Adopt(std::move(views), owner_);
        return;
      }
      for (size_t i = 1; i < n && ok_; ++i) {
        size_t len = 0;
        if (!Count(1, &len)) return;
        std::string_view s(reinterpret_cast<const char*>(p_), len);
        p_ += len;
        if (v.Intern(s) != i) ok_ = false;  // a repeated string: not what the writer wrote
      }
    } else if constexpr (IsVector<T>::value) {
      using E = typename T::value_type;
      if constexpr (IsRaw<E>::value) {
        if (!Count(sizeof(E), &n)) return;
        Align();
        if (!ok_ || n > left() / sizeof(E)) return void(ok_ = false);
        v.resize(n);
        Bytes(v.data(), n * sizeof(E));
        Align();
      } else {
        if (!Count(1, &n)) return;
        v.resize(n);
        for (auto& e : v) One(e);
      }
    } else if constexpr (IsColumn<T>::value) {
      using E = typename T::value_type;
      size_t encoding = 0;
      if (!Count(0, &n) || !Count(0, &encoding)) return;
      if (encoding == static_cast<size_t>(codec::Encoding::kZstd)) {
        codec::Transform transform{};
        std::vector<codec::ChunkRef> chunks;
        if (!codec::ScanChunks(&p_, end_, n, sizeof(E), &transform, &chunks)) return void(ok_ = false);
        codec::UndeltaFn undelta = codec::HasDelta(transform) ? codec::UndeltaFor<E>() : nullptr;
        if (codec::HasDelta(transform) && undelta == nullptr) return void(ok_ = false);
        v.resize_for_overwrite(n);
        base::AdviseHugePagesIfFree(v.data(), n * sizeof(E));  // written once, front to back
        for (const auto& c : chunks) jobs_.push_back({c, sizeof(E), v.data(), transform, undelta});
        Align();
        return;
      }
      if (encoding != static_cast<size_t>(codec::Encoding::kRaw)) return void(ok_ = false);
      Align();
      if (!ok_ || n > left() / sizeof(E)) return void(ok_ = false);
      if (owner_ && reinterpret_cast<uintptr_t>(p_) % alignof(E) == 0) {
        v.View(reinterpret_cast<const E*>(p_), n, owner_);
        p_ += n * sizeof(E);
      } else {
        v.resize(n);
        Bytes(v.data(), n * sizeof(E));
      }
      Align();
    } else if constexpr (IsPair<T>::value) {
      One(v.first);
      One(v.second);
    } else if constexpr (std::is_same_v<T, LodTable>) {
      v.ForEachColumn([&](const char*, auto& c) { this->One(c); });
      One(v.offsets);
      if (ok_ && !v.Consistent()) ok_ = false;
    } else if constexpr (kIsTable<T>) {
      v.ForEachColumn([&](const char*, auto& c) { this->One(c); });
      if (ok_ && !v.Consistent()) ok_ = false;
    } else {
      Visit(*this, v);
    }
  }

  const uint8_t* begin_;
  const uint8_t* p_;
  const uint8_t* end_;
  uint64_t offset_;
  std::shared_ptr<const void> owner_;
  std::vector<DecodeJob> jobs_;
  bool ok_ = true;
};

// Decodes the compressed columns' chunks on every core; false if one is damaged.
bool DecodeAll(const std::vector<DecodeJob>& jobs) {
  std::atomic<bool> ok{true};
  base::ParallelFor(jobs.size(), [&](size_t i) {
    const DecodeJob& j = jobs[i];
    if (ok.load(std::memory_order_relaxed) && !codec::DecodeChunk(j.chunk, j.row_bytes, j.column, j.transform, j.undelta))
      ok = false;
  });
  return ok;
}

}  // namespace

bool CompressIndexOf(const model::Trace& t, uint64_t trace_bytes) {
  if (trace_bytes == 0) return true;
  Writer count(-1, sizeof(Header));
  count(const_cast<model::Trace&>(t));
  uint64_t raw = 0, unused = 0;
  count.Finish(&raw, &unused);
  return static_cast<double>(raw) > kRawIndexShareOfTrace * static_cast<double>(trace_bytes);
}

Status WriteIndexFile(const model::Trace& t, const LodTable& lod, const ContentKey& key, const StatSignature& sig,
                      const std::string& path, uint64_t trace_bytes) {
  std::string tmp = path + ".tmp";
  auto created = CreateTempFile(tmp);
  if (!created.ok()) return created.status();
  int fd = *created;
  Header h{};
  std::memcpy(h.magic, kMagic, sizeof kMagic);
  h.version = kIndexFormatVersion;
  h.flags = sig.settled ? kSettled : 0;
  h.stat_sig = sig.hash;
  h.key_hi = key.hi;
  h.key_lo = key.lo;
  int err = WriteAll(fd, &h, sizeof h);  // rewritten with the payload's size and hash below
  if (err == 0) try {
    Writer w(fd, sizeof(Header));
    w.SetCompress(CompressIndexOf(t, trace_bytes));
    w(const_cast<model::Trace&>(t));
    h.lod_offset = w.Offset();
    h.model_hash = w.EndSection();
    w.SetCompress(false);  // a viewer maps the levels of detail and reads them in place
    w(const_cast<LodTable&>(lod));
    err = w.Finish(&h.payload_size, &h.lod_hash);
  } catch (const std::bad_alloc&) {  // compressing: no partial index is left behind
    ::close(fd);
    ::unlink(tmp.c_str());
    throw;
  }
  if (err == 0 && ::pwrite(fd, &h, sizeof h, 0) != static_cast<ssize_t>(sizeof h)) err = errno ? errno : EIO;
  if (::close(fd) != 0 && err == 0) err = errno;
  if (err == 0 && ::rename(tmp.c_str(), path.c_str()) != 0) err = errno;
  if (err != 0) {
    ::unlink(tmp.c_str());
    return ErrnoErr(err, "cannot write the index {}", path);
  }
  return OkStatus();
}

namespace {

StatusOr<model::Trace> Parse(const uint8_t* p, size_t n, const ContentKey* key, bool verify_hash,
                             const std::string& what, LodTable* lod, const std::shared_ptr<const void>& owner) {
  Header h;
  if (n < sizeof kMagic || std::memcmp(p, kMagic, sizeof kMagic) != 0)
    return Err(StatusCode::kCorrupt, "{}: not a strata index", what);
  if (n < sizeof h) return Err(StatusCode::kCorrupt, "{}: truncated index ({} bytes)", what, n);
  std::memcpy(&h, p, sizeof h);
  if (h.version != kIndexFormatVersion)
    return Err(StatusCode::kUnsupported, "{}: index format {} (this strata writes {})", what, h.version,
               kIndexFormatVersion);
  if (key && (h.key_hi != key->hi || h.key_lo != key->lo))
    return Err(StatusCode::kUnsupported, "{}: built from other content or by another strata build", what);
  if (h.payload_size != n - sizeof h)
    return Err(StatusCode::kCorrupt, "{}: truncated index ({} of {} bytes)", what, n - sizeof h, h.payload_size);
  if (h.lod_offset < sizeof h || h.lod_offset > n)
    return Err(StatusCode::kCorrupt, "{}: damaged index (bad layout)", what);
  // Only the section read is checked: a viewer opening the levels of detail
  // of a large index does not hash its model.
  if (verify_hash && (lod == nullptr ? XXH3_64bits(p + sizeof h, h.lod_offset - sizeof h) != h.model_hash
                                     : XXH3_64bits(p + h.lod_offset, n - h.lod_offset) != h.lod_hash))
    return Err(StatusCode::kCorrupt, "{}: damaged index (checksum mismatch)", what);
  model::Trace t;
  if (lod == nullptr) {
    Reader r(p + sizeof h, h.lod_offset - sizeof h, sizeof h, owner);
    r(t);
    if (!r.ok() || !r.at_end()) return Err(StatusCode::kCorrupt, "{}: damaged index (bad layout)", what);
    if (!DecodeAll(r.jobs())) return Err(StatusCode::kCorrupt, "{}: damaged index (a column does not decode)", what);
  } else {
    Reader r(p + h.lod_offset, n - h.lod_offset, h.lod_offset, owner);
    r(*lod);
    bool ok = r.ok() && r.at_end() && DecodeAll(r.jobs()) && !lod->offsets.empty() && lod->offsets.back() == lod->size();
    for (size_t i = 1; ok && i < lod->offsets.size(); ++i) ok = lod->offsets[i - 1] <= lod->offsets[i];
    if (!ok) return Err(StatusCode::kCorrupt, "{}: damaged index (bad levels of detail)", what);
  }
  return t;
}

// The index at `path`, mapped: the model's columns and strings are views of
// the mapping, which they keep alive.
StatusOr<model::Trace> ParseMapped(const std::string& path, const ContentKey& key, LodTable* lod,
                                   size_t spill_budget_bytes = 0) {
  // Decoded columns past the budget go to files beside the index (unless a
  // caller's scope already says where), as an import's would.
  std::optional<model::ScopedColumnSpill> spill;
  if (spill_budget_bytes > 0 && model::ColumnSpillDir().empty()) {
    std::string dir = std::filesystem::path(path).parent_path().string();
    if (dir.empty()) dir = ".";
    if (::access(dir.c_str(), W_OK) == 0) spill.emplace(dir, spill_budget_bytes);
  }
  auto map = MappedFile::Open(path);
  if (!map.ok()) return map.status();
  auto owner = std::make_shared<MappedFile>(std::move(*map));
  // Read front to back once (the checksum), then in place by the analyses:
  // the sequential hint MappedFile gives would let the kernel drop pages behind.
  if (owner->size() > 0) ::madvise(const_cast<uint8_t*>(owner->data()), owner->size(), MADV_NORMAL);
  return Parse(owner->data(), owner->size(), &key, /*verify_hash=*/true, path, lod, owner);
}

}  // namespace

StatusOr<model::Trace> ParseIndex(const uint8_t* p, size_t n, const ContentKey* key, bool verify_hash,
                                  const std::string& what, LodTable* lod) {
  return Parse(p, n, key, verify_hash, what, lod, nullptr);
}

StatusOr<IndexHeader> ReadIndexHeader(const std::string& path) {
  auto fd = OpenRegularFile(path);
  if (!fd.ok()) return fd.status();
  Header h;
  ssize_t n = ::pread(*fd, &h, sizeof h, 0);
  ::close(*fd);
  if (n != static_cast<ssize_t>(sizeof h) || std::memcmp(h.magic, kMagic, sizeof kMagic) != 0 ||
      h.version != kIndexFormatVersion)
    return Err(StatusCode::kCorrupt, "{}: not a strata index of this version", path);
  IndexHeader out;
  out.key = {h.key_hi, h.key_lo};
  out.sig = {h.stat_sig, (h.flags & kSettled) != 0};
  return out;
}

Status UpdateIndexSignature(const std::string& path, const StatSignature& sig) {
  int fd = ::open(path.c_str(), O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return ErrnoErr(errno, "cannot open {}", path);
  uint32_t flags = sig.settled ? kSettled : 0;
  bool ok = ::pwrite(fd, &flags, sizeof flags, offsetof(Header, flags)) == sizeof flags &&
            ::pwrite(fd, &sig.hash, sizeof sig.hash, offsetof(Header, stat_sig)) == sizeof sig.hash;
  int err = ok ? 0 : (errno ? errno : EIO);
  ::close(fd);
  return err ? ErrnoErr(err, "cannot update {}", path) : OkStatus();
}

StatusOr<LodTable> ReadIndexLod(const std::string& path, const ContentKey& key) {
  LodTable lod;
  auto t = ParseMapped(path, key, &lod);
  if (!t.ok()) return t.status();
  return lod;
}

StatusOr<model::Trace> ReadIndexFile(const std::string& path, const ContentKey& key, size_t spill_budget_bytes) {
  return ParseMapped(path, key, nullptr, spill_budget_bytes);
}

}  // namespace strata::index

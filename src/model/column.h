// A table column of the model: a vector of trivially copyable rows whose
// memory is one of three kinds.
//
//  - heap: owned, malloc'd (the default; grows like std::vector, by realloc).
//  - view: read-only rows that another object owns (a mapped trace index,
//    index/index_file.h). Reading a view costs nothing more than reading a
//    vector; the first change copies the rows to owned memory
//    (ColumnStats::copied counts those copies, so a test can check that a
//    report over an index reads it in place).
//  - spill: owned rows in a shared mapping of an unlinked file, for columns
//    past a size threshold while spilling is on (SetColumnSpill): building the
//    index of a trace larger than memory keeps its rows in the page cache,
//    which the kernel writes back and drops under pressure, instead of in
//    anonymous memory.
//
// Only what the model's users call of std::vector is here; element access
// and push_back are as cheap as a vector's (a view has no capacity, so the
// first push_back takes the growth path, which copies it).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

namespace strata::model {

// Spilling of large columns to files (process-wide; set before an import,
// not while one runs). `dir`: a folder on a disk-backed file system; empty
// turns spilling off. Columns that grow past `threshold_bytes` move to a file.
void SetColumnSpill(const std::string& dir, size_t threshold_bytes);
// The folder spilled columns go to, or "" when spilling is off.
std::string ColumnSpillDir();

// Spilling on for a scope (an import), as it was before at its end.
class ScopedColumnSpill {
 public:
  ScopedColumnSpill(const std::string& dir, size_t threshold_bytes);
  ~ScopedColumnSpill();
  ScopedColumnSpill(const ScopedColumnSpill&) = delete;
  ScopedColumnSpill& operator=(const ScopedColumnSpill&) = delete;

 private:
  std::string old_dir_;
  size_t old_threshold_;
};

struct ColumnStats {
  std::atomic<uint64_t> copied{0};         // views copied on their first change
  std::atomic<uint64_t> spilled_bytes{0};  // bytes now held in spill files
};
ColumnStats& GetColumnStats();

namespace column_detail {
// Owned storage of `bytes`, holding the first `keep` bytes of `old` (owned by
// this storage kind or null). `spill` says which kind `old` is and receives
// the kind of the result. Throws std::bad_alloc on failure.
void* Grow(void* old, size_t old_bytes, size_t keep, size_t bytes, bool* spill);
void Free(void* p, size_t bytes, bool spill);
}  // namespace column_detail

template <class T>
class Column {
  static_assert(std::is_trivially_copyable_v<T>, "columns hold rows as bytes");

 public:
  using value_type = T;
  using size_type = size_t;
  using reference = T&;
  using const_reference = const T&;
  using iterator = T*;
  using const_iterator = const T*;

  Column() = default;
  Column(std::initializer_list<T> rows) { assign(rows.begin(), rows.end()); }
  Column(size_t n, const T& v) { assign(n, v); }
  explicit Column(std::span<const T> rows) { assign(rows.begin(), rows.end()); }
  Column(const Column& o) { assign(o.begin(), o.end()); }
  Column(Column&& o) noexcept { swap(o); }
  Column& operator=(const Column& o) {
    if (this != &o) assign(o.begin(), o.end());
    return *this;
  }
  Column& operator=(Column&& o) noexcept {
    Column tmp(std::move(o));
    swap(tmp);
    return *this;
  }
  ~Column() { Release(); }

  void swap(Column& o) noexcept {
    std::swap(data_, o.data_);
    std::swap(size_, o.size_);
    std::swap(cap_, o.cap_);
    std::swap(spill_, o.spill_);
    std::swap(owner_, o.owner_);
  }

  // Reading.
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  size_t capacity() const { return cap_; }
  const T* data() const { return data_; }
  const T& operator[](size_t i) const { return data_[i]; }
  const T* begin() const { return data_; }
  const T* end() const { return data_ + size_; }
  const T& front() const { return data_[0]; }
  const T& back() const { return data_[size_ - 1]; }
  std::span<const T> span() const { return {data_, size_}; }
  std::vector<T> ToVector() const { return std::vector<T>(begin(), end()); }
  bool is_view() const { return owner_ != nullptr; }
  bool is_spilled() const { return spill_; }

  // Changing (a view is copied to owned memory first).
  T* data() { return Mutable(); }
  T& operator[](size_t i) { return Mutable()[i]; }
  T* begin() { return Mutable(); }
  T* end() { return Mutable() + size_; }
  T& front() { return Mutable()[0]; }
  T& back() { return Mutable()[size_ - 1]; }

  // Inline where it is called (importers append rows by the million); the
  // growth is out of line.
  [[gnu::always_inline]] void push_back(const T& v) {
    if (size_ == cap_) [[unlikely]]
      return GrowAndPush(v);
    data_[size_++] = v;
  }
  template <class... A>
  T& emplace_back(A&&... a) {
    push_back(T{std::forward<A>(a)...});
    return data_[size_ - 1];
  }
  void pop_back() { --size_; }
  void reserve(size_t n) {
    if (n > cap_) Reallocate(n);
  }
  void resize(size_t n) { resize(n, T{}); }
  void resize(size_t n, const T& v) {
    if (n > size_) {
      T copy = v;
      reserve(n);
      for (size_t i = size_; i < n; ++i) data_[i] = copy;
    } else if (owner_ && n < size_) {
      Mutable();
    }
    size_ = n;
  }
  // Makes the column `n` rows whose values are all unset, for a caller that
  // writes every one of them next (the index's decoder): nothing is copied
  // or filled first.
  void resize_for_overwrite(size_t n) {
    if (owner_ || n > cap_) {
      Release();
      if (n) Reallocate(n);
    }
    size_ = n;
  }
  void clear() {
    if (owner_) Release();
    size_ = 0;
  }
  void shrink_to_fit() {
    if (!owner_ && cap_ > size_) Reallocate(size_);
  }
  template <class It>
    requires(!std::is_integral_v<It>)
  void assign(It first, It last) {
    size_t n = static_cast<size_t>(std::distance(first, last));
    if (owner_) Release();
    size_ = 0;
    reserve(n);
    T* out = data_;
    for (; first != last; ++first) *out++ = *first;
    size_ = n;
  }
  void assign(size_t n, const T& v) {
    if (owner_) Release();
    size_ = 0;
    resize(n, v);
  }
  // Appends [first, last) at the end (the only insertion position columns use).
  template <class It>
  void insert(const T* pos, It first, It last) {
    (void)pos;  // end()
    size_t n = static_cast<size_t>(std::distance(first, last));
    reserve(size_ + n);
    T* out = data_ + size_;
    for (; first != last; ++first) *out++ = *first;
    size_ += n;
  }

  // Makes this column a read-only view of rows[0, n), which `owner` keeps alive.
  void View(const T* rows, size_t n, std::shared_ptr<const void> owner) {
    Release();
    data_ = const_cast<T*>(rows);
    size_ = cap_ = n;
    owner_ = std::move(owner);
  }

  friend bool operator==(const Column& a, const Column& b) {
    return a.size_ == b.size_ && (a.size_ == 0 || std::memcmp(a.data_, b.data_, a.size_ * sizeof(T)) == 0);
  }
  friend bool operator==(const Column& a, const std::vector<T>& b) {
    return a.size_ == b.size() && std::equal(a.begin(), a.end(), b.begin());
  }

 private:
  [[gnu::noinline]] void GrowAndPush(const T& v) {
    T copy = v;  // v may be a row of this column
    Reallocate(NextCapacity(size_ + 1));
    data_[size_++] = copy;
  }
  static size_t NextCapacity(size_t need) {
    size_t c = 16;
    while (c < need) c *= 2;
    return c;
  }
  T* Mutable() {
    if (owner_) [[unlikely]]
      Own();
    return data_;
  }
  void Own() {
    GetColumnStats().copied.fetch_add(1, std::memory_order_relaxed);
    const T* rows = data_;
    size_t n = size_;
    std::shared_ptr<const void> keep = std::move(owner_);
    owner_ = nullptr;
    data_ = nullptr;
    size_ = cap_ = 0;
    bool spill = false;
    void* p = column_detail::Grow(nullptr, 0, 0, n * sizeof(T), &spill);
    if (n) std::memcpy(p, rows, n * sizeof(T));
    data_ = static_cast<T*>(p);
    size_ = cap_ = n;
    spill_ = spill;
  }
  void Reallocate(size_t n) {
    if (owner_) Own();
    bool spill = spill_;
    void* p = column_detail::Grow(data_, cap_ * sizeof(T), size_ * sizeof(T), n * sizeof(T), &spill);
    data_ = static_cast<T*>(p);
    cap_ = n;
    spill_ = spill;
  }
  void Release() {
    if (owner_) {
      owner_.reset();
    } else if (data_) {
      column_detail::Free(data_, cap_ * sizeof(T), spill_);
    }
    data_ = nullptr;
    size_ = cap_ = 0;
    spill_ = false;
  }

  T* data_ = nullptr;
  size_t size_ = 0;
  size_t cap_ = 0;
  bool spill_ = false;
  std::shared_ptr<const void> owner_;  // set: data_ is a view of memory it keeps alive
};

}  // namespace strata::model

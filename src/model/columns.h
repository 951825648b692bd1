// One declaration per table column.
//
// Each table of the model lists its columns once, as an X-macro of
// (type, name) pairs; STRATA_COLUMNS turns the list into the column vectors
// and into everything that must visit every column: ForEachColumn (the trace
// index's writer and reader use it), Reserve, Erase and Consistent. A column
// added to the list is reserved, erased, stored and loaded with the others;
// none can be forgotten in one place and not another (Perfetto declares its
// tables in one place for the same reason, tables/*.py).
//
// In a column list, comments must be /* */: a // comment would swallow the
// line continuation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#define STRATA_COLUMN_FIELD(type, name) std::vector<type> name;
#define STRATA_COLUMN_VISIT(type, name) f(#name, name);

#define STRATA_COLUMNS(LIST)                                                                 \
  LIST(STRATA_COLUMN_FIELD)                                                                  \
  /* f(const char* name, std::vector<T>& column) for every column, in declaration order. */ \
  template <class F>                                                                         \
  void ForEachColumn(F&& f) {                                                                \
    LIST(STRATA_COLUMN_VISIT)                                                                \
  }                                                                                          \
  template <class F>                                                                         \
  void ForEachColumn(F&& f) const {                                                          \
    LIST(STRATA_COLUMN_VISIT)                                                                \
  }                                                                                          \
  void Reserve(size_t n) {                                                                   \
    ForEachColumn([n](const char*, auto& c) { c.reserve(n); });                              \
  }                                                                                          \
  /* Every column has the same number of rows. */                                            \
  bool Consistent() const {                                                                  \
    bool first = true, ok = true;                                                            \
    size_t n = 0;                                                                            \
    ForEachColumn([&](const char*, const auto& c) {                                          \
      if (first) n = c.size();                                                               \
      ok = ok && c.size() == n;                                                              \
      first = false;                                                                         \
    });                                                                                      \
    return ok;                                                                               \
  }                                                                                          \
  /* Removes the rows whose `drop` is set, keeping the others' order. */                     \
  void Erase(const std::vector<bool>& drop) {                                                \
    ForEachColumn([&drop](const char*, auto& c) {                                            \
      size_t w = 0;                                                                          \
      for (size_t i = 0; i < c.size(); ++i)                                                  \
        if (!drop[i]) c[w++] = c[i];                                                         \
      c.resize(w);                                                                           \
    });                                                                                      \
  }

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

#include "model/column.h"

#define STRATA_COLUMN_FIELD(type, name) ::strata::model::Column<type> name;
#define STRATA_COLUMN_VISIT(type, name) strata_visit_(#name, name);

#define STRATA_COLUMNS(LIST)                                                                 \
  LIST(STRATA_COLUMN_FIELD)                                                                  \
  /* f(const char* name, Column<T>& column) for every column, in declaration order. */ \
  template <class F>                                                                         \
  void ForEachColumn(F&& strata_visit_) {                                                    \
    LIST(STRATA_COLUMN_VISIT)                                                                \
  }                                                                                          \
  template <class F>                                                                         \
  void ForEachColumn(F&& strata_visit_) const {                                              \
    LIST(STRATA_COLUMN_VISIT)                                                                \
  }                                                                                          \
  void Reserve(size_t strata_rows_) {                                                        \
    ForEachColumn([strata_rows_](const char*, auto& c_) { c_.reserve(strata_rows_); });      \
  }                                                                                          \
  /* Every column has the same number of rows. */                                            \
  bool Consistent() const {                                                                  \
    bool strata_first_ = true, strata_ok_ = true;                                            \
    size_t strata_rows_ = 0;                                                                 \
    ForEachColumn([&](const char*, const auto& c_) {                                         \
      if (strata_first_) strata_rows_ = c_.size();                                           \
      strata_ok_ = strata_ok_ && c_.size() == strata_rows_;                                  \
      strata_first_ = false;                                                                 \
    });                                                                                      \
    return strata_ok_;                                                                       \
  }                                                                                          \
  /* Removes the rows whose `drop` is set, keeping the others' order. */                     \
  void Erase(const std::vector<bool>& strata_drop_) {                                        \
    ForEachColumn([&strata_drop_](const char*, auto& c_) {                                   \
      size_t w_ = 0;                                                                         \
      for (size_t i_ = 0; i_ < c_.size(); ++i_)                                              \
        if (!strata_drop_[i_]) c_[w_++] = c_[i_];                                            \
      c_.resize(w_);                                                                         \
    });                                                                                      \
  }

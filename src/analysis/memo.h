// Results of analyses computed once per trace while a Memo of that trace is
// alive. A report builds a dozen sections and the findings over one trace, and
// several of them ask for the same analysis (the critical paths: the Critical
// path section and the findings; the roofline: five places); with a Memo in
// scope each is computed once and handed out as a copy. Without one (a single
// analysis, `strata diff`), nothing is cached and nothing changes.
//
//   analysis::Memo memo(trace);   // for as long as the sections and findings are built
//
// An analysis asks Memo::Of(t) and, when there is one, Get(key, compute): the
// key names the analysis and every option that changes its result.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "model/trace.h"

namespace strata::analysis {

class Memo {
 public:
  explicit Memo(const model::Trace& t);
  ~Memo();
  Memo(const Memo&) = delete;
  Memo& operator=(const Memo&) = delete;

  // The live Memo of `t`, or nullptr.
  static Memo* Of(const model::Trace& t);

  // The result stored under `key`, computed by `compute` the first time.
  template <class T>
  T Get(const std::string& key, const std::function<T()>& compute) {
    std::unique_lock lock(mu_);
    auto it = results_.find(key);
    if (it != results_.end()) return *static_cast<const T*>(it->second.get());
    lock.unlock();  // (an analysis may ask for another one while it runs)
    auto value = std::make_shared<T>(compute());
    lock.lock();
    auto [pos, fresh] = results_.emplace(key, value);
    return *static_cast<const T*>(pos->second.get());
  }

 private:
  const model::Trace& t_;
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<void>> results_;
};

}  // namespace strata::analysis

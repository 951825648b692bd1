// Results of analyses computed once per trace while a Memo of that trace is
// alive. A report builds a dozen sections and the findings over one trace, and
// several of them ask for the same analysis (the critical paths: the Critical
// path section and the findings; the roofline: five places); with a Memo in
// scope each is computed once, and handed out by reference for as long as the
// Memo lives. Without one (a single
// analysis, `strata diff`), nothing is cached and nothing changes.
//
//   analysis::Memo memo(trace);   // for as long as the sections and findings are built
//
// An analysis asks Memo::Of(t) and, when there is one, Get(key, compute): the
// key names the analysis and every option that changes its result.
#pragma once

#include <functional>
#include <future>
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

  // The result stored under `key`, computed by `compute` the first time. Safe
  // from several threads: a second asker of a key being computed waits for
  // that computation instead of repeating it (report sections build in
  // parallel and several ask for the same analysis).
  template <class T>
  const T& Get(const std::string& key, const std::function<T()>& compute) {
    std::unique_lock lock(mu_);
    auto it = results_.find(key);
    if (it != results_.end()) {
      std::shared_future<std::shared_ptr<void>> f = it->second;
      lock.unlock();  // (its computation may be under way in another thread)
      return *static_cast<const T*>(f.get().get());
    }
    std::promise<std::shared_ptr<void>> promise;
    results_.emplace(key, promise.get_future().share());
    lock.unlock();  // (an analysis may ask for another one while it runs)
    try {
      auto value = std::make_shared<T>(compute());
      const T& ref = *value;
      promise.set_value(std::move(value));
      return ref;
    } catch (...) {
      promise.set_exception(std::current_exception());
      throw;
    }
  }

 private:
  const model::Trace& t_;
  std::mutex mu_;
  std::map<std::string, std::shared_future<std::shared_ptr<void>>> results_;
};

}  // namespace strata::analysis

#include "analysis/memo.h"

#include <unordered_map>

namespace strata::analysis {
namespace {

std::mutex& RegistryMutex() {
  static std::mutex mu;
  return mu;
}

std::unordered_map<const model::Trace*, Memo*>& Registry() {
  static std::unordered_map<const model::Trace*, Memo*> live;
  return live;
}

}  // namespace

Memo::Memo(const model::Trace& t) : t_(t) {
  std::lock_guard lock(RegistryMutex());
  // (A second Memo of the same trace, nested, leaves the outer one in charge.)
  Registry().try_emplace(&t_, this);
}

Memo::~Memo() {
  std::lock_guard lock(RegistryMutex());
  auto it = Registry().find(&t_);
  if (it != Registry().end() && it->second == this) Registry().erase(it);
}

Memo* Memo::Of(const model::Trace& t) {
  std::lock_guard lock(RegistryMutex());
  auto it = Registry().find(&t);
  return it == Registry().end() ? nullptr : it->second;
}

}  // namespace strata::analysis

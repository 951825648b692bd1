#include "index/open_trace.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <xxhash.h>

#include "base/files.h"
#include "importers/load.h"
#include "importers/merged/merged.h"
#include "index/content_key.h"
#include "index/index_file.h"
#include "index/results_file.h"

namespace strata::index {
namespace {

std::string Parent(const std::string& path) {
  size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

// The user may write there: the permission bits say so (even for root, who
// could write anyway: a trace made read-only is left alone) and the OS agrees.
bool Writable(const std::string& dir) {
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return false;
  if ((st.st_mode & 0222) == 0) return false;
  return ::access(dir.c_str(), W_OK) == 0;
}

// Where an index of `trace` may be written beside it, or "" when the trace or
// its folder is read-only.
std::string BesideIfWritable(const std::string& trace, bool is_dir) {
  if (is_dir) return Writable(trace) ? BesideIndexPath(trace) : "";
  struct stat st;
  if (::stat(trace.c_str(), &st) != 0 || (st.st_mode & 0222) == 0) return "";
  return Writable(Parent(trace)) ? BesideIndexPath(trace) : "";
}

void Touch(const std::string& p) { ::utimensat(AT_FDCWD, p.c_str(), nullptr, 0); }

// An index in the cache counts with its stored results (INDEX.result-*), and
// is as recently used as the newest of them; results whose index is gone are
// removed with the first pruning that sees them.
void PruneCache(const std::string& dir, uint64_t budget) {
  auto names = ListFiles(dir);
  if (!names.ok()) return;
  struct Entry {
    int64_t mtime = 0;
    uint64_t size = 0;
    bool has_index = false;
  };
  std::map<std::string, Entry> entries;  // by index path
  const std::string infix = std::string(kIndexSuffix) + kResultInfix;
  for (const std::string& n : *names) {
    std::string_view v(n);
    std::string index_name;
    if (v.ends_with(kIndexSuffix)) {
      index_name = n;
    } else if (size_t at = v.find(infix); at != std::string_view::npos) {
      index_name = n.substr(0, at + std::strlen(kIndexSuffix));
    } else {
      continue;
    }
    std::string p = JoinPath(dir, n);
    struct stat st;
    if (::stat(p.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    Entry& e = entries[JoinPath(dir, index_name)];
    e.mtime = std::max(e.mtime, static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec);
    e.size += static_cast<uint64_t>(st.st_size);
    e.has_index = e.has_index || index_name.size() == n.size();
  }
  std::vector<std::pair<std::string, Entry>> order;
  uint64_t total = 0;
  for (auto& [path, e] : entries) {
    if (!e.has_index) {
      RemoveResults(path);
      continue;
    }
    total += e.size;
    order.emplace_back(path, e);
  }
  std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return a.second.mtime < b.second.mtime; });
  for (size_t i = 0; i + 1 < order.size() && total > budget; ++i) {  // never the newest
    if (::unlink(order[i].first.c_str()) == 0 || errno == ENOENT) {
      RemoveResults(order[i].first);
      total -= order[i].second.size;
    }
  }
}

// The cache's slot for a trace: named by a hash of the trace's absolute path
// (found without reading the trace), trusted only for its content (the index's
// header says what it was built from).
std::string CachePath(const IndexOptions& io, const std::string& trace) {
  if (io.cache_dir.empty()) return "";
  char* real = ::realpath(trace.c_str(), nullptr);
  std::string abs = real ? real : trace;
  std::free(real);
  return JoinPath(JoinPath(io.cache_dir, "index"), fmt::format("{:016x}", XXH3_64bits(abs.data(), abs.size())) + kIndexSuffix);
}

}  // namespace

void KeepCacheBounded(const IndexUse& use) {
  if (use.in_cache && !use.path.empty()) PruneCache(Parent(use.path), use.cache_budget_bytes);
}

IndexOptions IndexOptionsFromEnv() {
  IndexOptions o;
  const char* v = ::secure_getenv("STRATA_INDEX");
  std::string_view s = v ? v : "";
  if (s == "off" || s == "0" || s == "no") o.mode = IndexOptions::Mode::kOff;
  if (s == "rebuild") o.mode = IndexOptions::Mode::kRebuild;
  if (s == "cache") o.beside = false;
  if (const char* b = ::secure_getenv("STRATA_INDEX_BUDGET_MB"); b && *b) {
    char* end = nullptr;
    unsigned long long mb = std::strtoull(b, &end, 10);
    if (end && *end == '\0') o.column_budget_bytes = static_cast<size_t>(mb) << 20;
  }
  if (const char* b = ::secure_getenv("STRATA_INDEX_CACHE_MB"); b && *b) {
    char* end = nullptr;
    unsigned long long mb = std::strtoull(b, &end, 10);
    if (end && *end == '\0') o.cache_budget_bytes = static_cast<uint64_t>(mb) << 20;
  }
  return o;
}

std::string BesideIndexPath(const std::string& trace) {
  std::string t = trace;
  while (t.size() > 1 && t.back() == '/') t.pop_back();
  if (IsDirectory(t)) return JoinPath(t, kIndexFileName);
  return t + kIndexSuffix;
}

StatusOr<CurrentIndex> FindCurrentIndex(const std::string& trace, const IndexOptions& io) {
  if (io.mode != IndexOptions::Mode::kUse && io.mode != IndexOptions::Mode::kCheck)
    return Status(StatusCode::kNotFound, "indexes are not read");
  struct stat st;
  if (::stat(trace.c_str(), &st) != 0 || (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode)))
    return Status(StatusCode::kNotFound, "not a trace");
  if (S_ISDIR(st.st_mode) && DirectoryLocked(trace)) return Status(StatusCode::kNotFound, "still being recorded");
  auto sig = StatSignatureOf(trace);
  if (!sig.ok() || !sig->settled) return Status(StatusCode::kNotFound, "no settled signature");
  std::vector<std::string> candidates;
  if (io.beside) candidates.push_back(BesideIndexPath(trace));
  if (std::string cached = CachePath(io, trace); !cached.empty()) candidates.push_back(cached);
  for (const std::string& p : candidates) {
    auto h = ReadIndexHeader(p);
    if (h.ok() && h->sig.settled && h->sig.hash == sig->hash) return CurrentIndex{p, h->key};
  }
  return Status(StatusCode::kNotFound, "no index current by signature");
}

StatusOr<model::Trace> OpenTrace(const std::string& path, const importers::LoadOptions& lo, const IndexOptions& io,
                                 IndexUse* use) {
  IndexUse local;
  IndexUse& u = use ? *use : local;
  u = IndexUse{};
  u.cache_budget_bytes = io.cache_budget_bytes;
  struct stat st;
  const bool check = io.mode == IndexOptions::Mode::kCheck;
  if (check && (::stat(path.c_str(), &st) != 0 || !StatSignatureOf(path).ok()))
    return Status(StatusCode::kNotFound, "no such trace");
  // Anything but a trace file or directory goes to the importer, which says why not.
  if (io.mode == IndexOptions::Mode::kOff || ::stat(path.c_str(), &st) != 0 ||
      (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode)))
    return importers::LoadTrace(path, lo);
  bool is_dir = S_ISDIR(st.st_mode);
  // A merged trace has no index of its own: its members are read through theirs.
  if (is_dir && importers::IsMergedTraceDir(path)) {
    // The merged model is built anew: past the budget, its columns spill into
    // the merged trace's directory (members' own imports spill beside theirs).
    std::optional<model::ScopedColumnSpill> spill;
    if (io.column_budget_bytes > 0 && ::access(path.c_str(), W_OK) == 0) spill.emplace(path, io.column_budget_bytes);
    return importers::LoadMergedTrace(
        path, [&lo, &io](const std::string& member) { return OpenTrace(member, lo, io, nullptr); });
  }
  auto sig = StatSignatureOf(path);
  if (!sig.ok()) return importers::LoadTrace(path, lo);
  std::vector<std::string> candidates;
  if (io.beside) candidates.push_back(BesideIndexPath(path));
  std::string cached = CachePath(io, path);
  if (!cached.empty()) candidates.push_back(cached);
  // The content key, hashed from every byte of the trace when first needed.
  std::optional<ContentKey> key;
  auto content_key = [&]() -> const ContentKey* {
    if (!key) {
      auto k = KeyOfTrace(path);
      if (!k.ok()) return nullptr;
      key = *k;
    }
    return &*key;
  };
  auto found = [&](StatusOr<model::Trace>& t, const std::string& p, const ContentKey& k) {
    if (p == cached) {
      Touch(p);  // recently used: kept by the cache's pruning
      u.in_cache = true;
    }
    t->path = path;
    u.read = true;
    u.path = p;
    u.key = k;
  };
  if (io.mode == IndexOptions::Mode::kUse || io.mode == IndexOptions::Mode::kCheck) {
    // Unchanged files by their signature: the index's own key is the trace's.
    for (const std::string& p : candidates) {
      auto h = ReadIndexHeader(p);
      if (!h.ok() || !h->sig.settled || !sig->settled || h->sig.hash != sig->hash) continue;
      auto t = ReadIndexFile(p, h->key, io.column_budget_bytes);
      if (t.ok()) {
        found(t, p, h->key);
        u.by_signature = true;
        return t;
      }
      if (t.status().code() == StatusCode::kCorrupt) u.rejected = t.status().message();
    }
    // Else by content.
    for (const std::string& p : candidates) {
      if (!PathExists(p) || !content_key()) continue;
      auto t = ReadIndexFile(p, *key, io.column_budget_bytes);
      if (t.ok()) {
        if (sig->settled) (void)UpdateIndexSignature(p, *sig);
        found(t, p, *key);
        return t;
      }
      if (t.status().code() == StatusCode::kCorrupt) u.rejected = t.status().message();
    }
  }
  if (io.mode == IndexOptions::Mode::kCheck) return Status(StatusCode::kNotFound, "no current index");
  // Beside the trace when it may be written there, else in the cache; a
  // failure to write costs the next command an import, nothing else. (Not
  // while `strata record` still writes the trace: the next open would find
  // other content anyway.)
  std::string target;
  if (!(is_dir && DirectoryLocked(path))) {
    target = io.beside ? BesideIfWritable(path, is_dir) : "";
    if (target.empty() && !cached.empty() && MakeDirs(Parent(cached)).ok()) target = cached;
  }
  StatusOr<model::Trace> t = Status(StatusCode::kInternal, "");
  {
    // A trace larger than the budget keeps its columns in files beside the
    // index while it is imported, not in anonymous memory.
    model::ScopedColumnSpill spill(target.empty() ? "" : Parent(target), io.column_budget_bytes);
    t = importers::LoadTrace(path, lo);
  }
  if (!t.ok() || !content_key()) return t;
  if (is_dir && DirectoryLocked(path)) return t;
  if (!target.empty()) {
    LodTable lod = BuildLod(*t);
    auto bytes = TraceBytes(path);
    const uint64_t trace_bytes = bytes.ok() ? *bytes : 0;
    Status w = WriteIndexFile(*t, lod, *key, *sig, target, trace_bytes);
    if (!w.ok() && target != cached && !cached.empty() && MakeDirs(Parent(cached)).ok()) {
      target = cached;  // EROFS and the like: the permission bits said yes, the OS no
      w = WriteIndexFile(*t, lod, *key, *sig, target, trace_bytes);
    }
    if (w.ok()) {
      u.written = true;
      u.in_cache = target == cached;
      u.path = target;
      u.key = *key;
      RemoveResults(target);  // computed from the index replaced
      if (target == cached) PruneCache(Parent(cached), io.cache_budget_bytes);
      // The imported model is what the index holds: the analyses read it
      // (mapping the index back would decode its compressed columns again).
    }
  }
  return t;
}

}  // namespace strata::index

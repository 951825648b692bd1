// Every command that reads a trace opens it through its index.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "cli/commands.h"
#include "importers/merged/merged.h"
#include "index/open_trace.h"

namespace strata::cli {

index::IndexOptions IndexOptionsForCommand() {
  index::IndexOptions io = index::IndexOptionsFromEnv();
  io.cache_dir = CacheDir();
  return io;
}

StatusOr<model::Trace> OpenTraceForCommand(const std::string& path, const importers::LoadOptions& lo,
                                           index::IndexUse* out) {
  index::IndexOptions io = IndexOptionsForCommand();
  index::IndexUse local;
  index::IndexUse& use = out ? *out : local;
  auto t = index::OpenTrace(path, lo, io, &use);
  // A damaged index is worth a line: something wrote over it, or a disk lost it.
  if (!use.rejected.empty())
    std::fprintf(stderr, "strata: %s; imported the trace again%s\n", use.rejected.c_str(),
                 use.written ? " and replaced the index" : "");
  // The analyses' own large arrays (a value per slice) spill past the same
  // budget as the import's columns, beside the index, for the rest of the
  // command: a report of a trace larger than memory stays in the budget.
  if (t.ok() && !use.path.empty()) {
    std::string dir = std::filesystem::path(use.path).parent_path().string();
    model::SetColumnSpill(dir.empty() ? "." : dir, io.column_budget_bytes);
  } else if (t.ok() && importers::IsMergedTraceDir(path) && ::access(path.c_str(), W_OK) == 0) {
    model::SetColumnSpill(path, io.column_budget_bytes);  // a merged trace: no index, its own directory
  }
  return t;
}

}  // namespace strata::cli

// Opening a trace through its index: what every command that reads a trace
// calls (report, export, diff, flamegraph, sweep).
//
// The first open of a trace imports it (importers::LoadTrace) and stores the
// model as an index (index_file.h): inside a trace directory as
// `.strata-index`, beside a trace file as `FILE.strata-index`, or, when the
// trace is read-only (no write permission on it or its folder, or a read-only
// file system), in the cache directory as `index/<hash of its path>.strata-index`
// (the least recently used of those, with their stored results, are removed
// past 4 GiB).
// The index just written is then mapped, like every later open's (the
// imported model is given back), and its columns are read in place.
// Later opens map the index instead of importing again when it was built from
// the same bytes: the trace's files have the signature the index recorded
// (inode, size, modification and change times; content_key.h), or else their
// content hashes to the index's key. An index that is stale (the
// trace changed, another strata built it), truncated or damaged is never used:
// the trace is imported again and the index replaced.
#pragma once

#include <string>

#include "base/status.h"
#include "importers/load_options.h"
#include "index/content_key.h"
#include "model/trace.h"

namespace strata::index {

struct IndexOptions {
  enum class Mode {
    kUse,      // read the index, build it when missing or not valid
    kOff,      // import the trace directly; no index read or written
    kRebuild,  // import the trace and replace its index
    kCheck,    // read a current index; never import (kNotFound when there is none)
  };
  Mode mode = Mode::kUse;
  // Write indexes beside traces (false: only in the cache directory; tests
  // set it so that shared test data is never written to).
  bool beside = true;
  // Where indexes of read-only traces go (an "index" folder is made in it);
  // empty: only beside the trace.
  std::string cache_dir;
  // While a trace is imported to build its index, the model's columns stay in
  // memory up to this many bytes; past it, large ones are spilled to
  // unlinked files in the index's folder (model/column.h), so that indexing
  // a trace larger than memory is bounded by the budget and the importer's
  // own state. STRATA_INDEX_BUDGET_MB sets it; 0: never spill.
  size_t column_budget_bytes = size_t{1} << 30;
  // The cache directory's indexes and their stored results past this many
  // bytes are removed, least recently used first (never the one just used).
  // STRATA_INDEX_CACHE_MB sets it.
  uint64_t cache_budget_bytes = uint64_t{4} << 30;
};

// What OpenTrace did, for messages and tests.
struct IndexUse {
  bool read = false;     // the model came from an index
  bool by_signature = false;  // ... trusted by the trace's file-system signature, without hashing its content
  bool written = false;  // an index was written
  std::string path;      // the index read or written
  bool in_cache = false; // ... which is in the cache directory
  uint64_t cache_budget_bytes = 0;  // ... kept within this many bytes
  ContentKey key;        // ... and its key (valid when path is set)
  // Why an index found was not used ("damaged (checksum mismatch)"), when it
  // was damaged or truncated rather than merely stale; empty otherwise.
  std::string rejected;
};

// The options STRATA_INDEX names: "off" (or "0"), "rebuild", "cache" (use
// indexes, but only in the cache directory); anything else the defaults.
IndexOptions IndexOptionsFromEnv();

// Where the index of `trace` goes beside it (inside a directory, next to a file).
std::string BesideIndexPath(const std::string& trace);

// The index of `trace` when one is current by the trace's file-system
// signature alone (no trace byte and no model read: an 80-byte header), with
// its key (what results_file.h stores results under); kNotFound otherwise (no
// index, the trace changed or its signature is not settled yet, another build
// made it, or `io` turns indexes off or asks for a rebuild). Stored results are
// looked up through this; a trace not current by signature is opened the
// usual way (OpenTrace), which settles its signature for the next time.
struct CurrentIndex {
  std::string path;
  ContentKey key;
};
StatusOr<CurrentIndex> FindCurrentIndex(const std::string& trace, const IndexOptions& io);

// After a result was stored beside a cached index (results_file.h): the cache
// is pruned back to its budget, results counted with their index.
void KeepCacheBounded(const IndexUse& use);

StatusOr<model::Trace> OpenTrace(const std::string& path, const importers::LoadOptions& lo,
                                 const IndexOptions& io, IndexUse* use = nullptr);

}  // namespace strata::index

// The trace index file: a whole analysis model (model::Trace) as it came out
// of its importer, stored so that the next command maps it instead of
// importing the trace again.
//
// Layout: an 80-byte header (magic "STRATAIX", format version, the content key
// and the file-system signature of the trace it was built from, the payload's
// size, and an XXH3 hash of each section), then the model's section: every
// table column as a count, an encoding, and its rows (raw little-endian rows,
// 8-byte aligned, read in place; or zstd chunks, decoded on every core when
// the index is opened: column_codec.h), in the order the model declares them
// (model/columns.h), and the model's other members field by field; then the
// levels of detail (lod.h), raw, at an offset the header gives, so a viewer
// maps them and reads (and hashes) them alone. Reading checks the
// magic, the version, the key, the size and the hash of the section it reads
// before it trusts a byte: a truncated, damaged or stale index is refused with
// the reason, never half-read.
#pragma once

#include <string>

#include "base/status.h"
#include "index/content_key.h"
#include "index/lod.h"
#include "model/trace.h"

namespace strata::index {

// Writes `t` to `path` (through path + ".tmp" and a rename, so a reader never
// sees a partial index), with the content key and the file-system signature
// of the trace it came from.
// `lod`: the levels of detail of its tracks (BuildLod), stored after the model.
//
// `trace_bytes`: the size of the trace's files. The model's columns are
// stored as they are in memory, and read in place with nothing to decode, when
// that takes at most kRawIndexShareOfTrace of the trace (a JSON trace's model
// is about a quarter of its text); else compressed where that pays
// (column_codec.h: a recorded CTF trace's model is 2-3x its packed events).
// 0: compressed.
inline constexpr double kRawIndexShareOfTrace = 0.5;
Status WriteIndexFile(const model::Trace& t, const LodTable& lod, const ContentKey& key, const StatSignature& sig,
                      const std::string& path, uint64_t trace_bytes = 0);
// Whether WriteIndexFile compresses the columns of `t` (for a trace of `trace_bytes`).
bool CompressIndexOf(const model::Trace& t, uint64_t trace_bytes);

// An index's header alone (80 bytes read): what it was built from.
struct IndexHeader {
  ContentKey key;
  StatSignature sig;  // settled only if it was when written (or updated since)
};
StatusOr<IndexHeader> ReadIndexHeader(const std::string& path);
// Records a settled signature of the trace in the index's header, once its
// content key has been checked against the index (the next open then checks
// only the signature).
Status UpdateIndexSignature(const std::string& path, const StatSignature& sig);

// Reads the index at `path` if it was built from the content `key` names.
// kNotFound: no index there; kCorrupt: damaged or truncated; kUnsupported:
// built by another strata or from other content (stale).
// `spill_budget_bytes` > 0: decoded columns past that many bytes of heap go
// to unlinked files beside the index (model/column.h), not anonymous memory.
StatusOr<model::Trace> ReadIndexFile(const std::string& path, const ContentKey& key, size_t spill_budget_bytes = 0);

// The levels of detail of the index at `path` (the model is not read), with
// the same checks as ReadIndexFile.
StatusOr<LodTable> ReadIndexLod(const std::string& path, const ContentKey& key);

// The same checks and parse over an index's bytes (`what` names it in errors).
// `key` null: any key; `verify_hash` false: the payload's checksum is not
// checked (the fuzz target reaches the layout's parser that way).
StatusOr<model::Trace> ParseIndex(const uint8_t* data, size_t size, const ContentKey* key, bool verify_hash,
                                  const std::string& what, LodTable* lod = nullptr);

}  // namespace strata::index

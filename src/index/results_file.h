// Stored results: what a command computed from an indexed trace (a report in
// one format with one set of options), kept beside the trace's index so that
// the same question asked again is answered without running the analyses:
// `strata report` twice, a report after `strata index` (which stores the
// default ones), the web UI's summary.
//
// A result is a file next to the index, INDEX.result-<16 hex digits> (the
// hash of what it answers), holding a header (magic "STRATARS", version, the
// content key of the index it was computed from, the length of the question
// and of the answer, an XXH3 hash of both), the question (a canonical string
// of the command, its options and the format) and the answer's bytes. A
// result is trusted only when every check holds: the question is the one
// asked (not merely its hash), the key is the current index's key (which is
// the trace's content and this build of strata: a new trace, a new strata or
// a rebuilt index leaves older results unused), and the hash matches.
// Results are removed with their index (replaced, or pruned from the cache),
// and at most kMaxResults are kept per index (the least recently used go).
#pragma once

#include <string>
#include <string_view>

#include "base/status.h"
#include "index/content_key.h"

namespace strata::index {

inline constexpr size_t kMaxResults = 16;
// What follows the index's path in a result's name (INDEX.result-<hash>).
inline constexpr const char* kResultInfix = ".result-";
// Answers larger than this are not kept (a --full JSON of a long run).
inline constexpr size_t kMaxResultBytes = size_t{64} << 20;

// Where the result answering `question` of the index at `index_path` is kept.
std::string ResultPath(const std::string& index_path, std::string_view question);

// The stored answer to `question`, computed from the index with content key
// `key`. kNotFound when none is kept; kCorrupt when one is there but damaged
// or for another question or index (it is then not used).
StatusOr<std::string> ReadResult(const std::string& index_path, const ContentKey& key, std::string_view question);

// The checks and layout of a result file's bytes (`what` names it in errors):
// the question and the answer it holds, as views into `bytes`. `key` null:
// any index's.
struct ParsedResult {
  std::string_view question;
  std::string_view answer;
};
StatusOr<ParsedResult> ParseResult(std::string_view bytes, const ContentKey* key, const std::string& what);

// Keeps `answer` to `question` (through a temporary file and a rename), then
// removes the least recently used results of the index past kMaxResults.
// Answers over kMaxResultBytes are not kept (OK: nothing to do).
Status WriteResult(const std::string& index_path, const ContentKey& key, std::string_view question,
                   std::string_view answer);

// Removes every result kept for the index at `index_path`.
void RemoveResults(const std::string& index_path);

}  // namespace strata::index

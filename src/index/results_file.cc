#include "index/results_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include <fmt/format.h>
#include <xxhash.h>

#include "base/error.h"
#include "base/files.h"

namespace strata::index {
namespace {

constexpr char kMagic[8] = {'S', 'T', 'R', 'A', 'T', 'A', 'R', 'S'};
constexpr uint32_t kVersion = 1;

struct Header {
  char magic[8];
  uint32_t version;
  uint32_t reserved;
  uint64_t key_hi;
  uint64_t key_lo;
  uint64_t question_size;
  uint64_t answer_size;
  uint64_t hash;  // XXH3 of the question then the answer
};
static_assert(sizeof(Header) == 56);

uint64_t HashOf(std::string_view question, std::string_view answer) {
  XXH3_state_t* st = XXH3_createState();
  if (!st) return 0;
  XXH3_64bits_reset(st);
  XXH3_64bits_update(st, question.data(), question.size());
  XXH3_64bits_update(st, answer.data(), answer.size());
  uint64_t h = XXH3_64bits_digest(st);
  XXH3_freeState(st);
  return h;
}

std::pair<std::string, std::string> SplitPath(const std::string& p) {
  size_t slash = p.find_last_of('/');
  if (slash == std::string::npos) return {".", p};
  return {slash == 0 ? "/" : p.substr(0, slash), p.substr(slash + 1)};
}

struct Kept {
  int64_t atime;
  std::string path;
};

// The results kept for the index at `index_path`, least recently used first.
std::vector<Kept> KeptResults(const std::string& index_path) {
  auto [dir, base] = SplitPath(index_path);
  std::vector<Kept> out;
  auto names = ListFiles(dir);
  if (!names.ok()) return out;
  const std::string prefix = base + kResultInfix;
  for (const std::string& n : *names) {
    if (!n.starts_with(prefix) || n.ends_with(".tmp")) continue;
    std::string p = JoinPath(dir, n);
    struct stat st;
    if (::stat(p.c_str(), &st) != 0) continue;
    // The modification time is touched on every use (file systems mounted
    // noatime would not keep an access time).
    out.push_back({static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec, p});
  }
  std::sort(out.begin(), out.end(), [](const Kept& a, const Kept& b) { return a.atime < b.atime; });
  return out;
}

}  // namespace

std::string ResultPath(const std::string& index_path, std::string_view question) {
  return index_path + kResultInfix + fmt::format("{:016x}", XXH3_64bits(question.data(), question.size()));
}

StatusOr<ParsedResult> ParseResult(std::string_view b, const ContentKey* key, const std::string& what) {
  Header h;
  if (b.size() < sizeof h) return Err(StatusCode::kCorrupt, "{}: truncated", what);
  std::memcpy(&h, b.data(), sizeof h);
  if (std::memcmp(h.magic, kMagic, sizeof kMagic) != 0 || h.version != kVersion)
    return Err(StatusCode::kCorrupt, "{}: not a strata result of this version", what);
  if (key && (h.key_hi != key->hi || h.key_lo != key->lo))
    return Err(StatusCode::kCorrupt, "{}: computed from another index", what);
  const size_t body = b.size() - sizeof h;
  if (h.question_size > body || h.answer_size != body - h.question_size)
    return Err(StatusCode::kCorrupt, "{}: truncated", what);
  ParsedResult r;
  r.question = b.substr(sizeof h, h.question_size);
  r.answer = b.substr(sizeof h + h.question_size);
  if (HashOf(r.question, r.answer) != h.hash) return Err(StatusCode::kCorrupt, "{}: damaged (checksum mismatch)", what);
  return r;
}

StatusOr<std::string> ReadResult(const std::string& index_path, const ContentKey& key, std::string_view question) {
  const std::string path = ResultPath(index_path, question);
  if (!PathExists(path)) return Err(StatusCode::kNotFound, "{}: no stored result", path);
  auto bytes = ReadFile(path);
  if (!bytes.ok()) return bytes.status();
  auto r = ParseResult(*bytes, &key, path);
  if (!r.ok()) return r.status();
  if (r->question != question) return Err(StatusCode::kCorrupt, "{}: the answer to another question", path);
  ::utimensat(AT_FDCWD, path.c_str(), nullptr, 0);  // recently used
  return std::string(r->answer);
}

Status WriteResult(const std::string& index_path, const ContentKey& key, std::string_view question,
                   std::string_view answer) {
  if (answer.size() > kMaxResultBytes) return OkStatus();
  Header h{};
  std::memcpy(h.magic, kMagic, sizeof kMagic);
  h.version = kVersion;
  h.key_hi = key.hi;
  h.key_lo = key.lo;
  h.question_size = question.size();
  h.answer_size = answer.size();
  h.hash = HashOf(question, answer);
  std::string out(reinterpret_cast<const char*>(&h), sizeof h);
  out.append(question);
  out.append(answer);
  if (Status s = WriteFileAtomic(ResultPath(index_path, question), out); !s.ok()) return s;
  std::vector<Kept> kept = KeptResults(index_path);
  for (size_t i = 0; i + kMaxResults < kept.size(); ++i) ::unlink(kept[i].path.c_str());
  return OkStatus();
}

void RemoveResults(const std::string& index_path) {
  for (const Kept& k : KeptResults(index_path)) ::unlink(k.path.c_str());
}

}  // namespace strata::index

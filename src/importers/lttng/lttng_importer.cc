// LTTng trace directories: finding them, telling them from strata's own CTF
// traces, and loading them (lttng_reader.cc reads, lttng_replay.cc builds).
#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <string_view>

#include "base/error.h"
#include "base/files.h"
#include "importers/lttng/lttng.h"
#include "importers/lttng/lttng_reader.h"
#include "importers/lttng/lttng_replay.h"
#include "importers/strata_trace.h"

namespace strata::importers {
namespace {

// A session's output nests its traces: kernel/, ust/uid/<uid>/64-bit/,
// ust/pid/<name>-<pid>-<date>/; archived rotations one level more.
constexpr int kMaxDepth = 6;
constexpr size_t kMaxDirs = 4096;        // directories looked at, in all
constexpr size_t kMetadataHead = 1 << 18;  // the env block comes early in LTTng's metadata

void Walk(const std::string& dir, int depth, size_t& seen, std::vector<std::string>& out) {
  if (depth > kMaxDepth || ++seen > kMaxDirs) return;
  struct stat st;
  std::string meta = JoinPath(dir, "metadata");
  if (::stat(meta.c_str(), &st) == 0 && S_ISREG(st.st_mode)) out.push_back(dir);
  DIR* d = ::opendir(dir.c_str());
  if (!d) return;
  std::vector<std::string> subdirs;
  while (dirent* e = ::readdir(d)) {
    std::string_view n = e->d_name;
    if (n.empty() || n[0] == '.') continue;
    std::string p = JoinPath(dir, n);
    // lstat: a link could loop, or lead outside the trace.
    if (::lstat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) subdirs.push_back(std::move(p));
  }
  ::closedir(d);
  std::sort(subdirs.begin(), subdirs.end());
  for (const std::string& s : subdirs) Walk(s, depth + 1, seen, out);
}

// LTTng's metadata (plain TSDL, or packetized with the text between packet
// headers) names its tracer in the env block: tracer_name = "lttng-modules"/"lttng-ust".
bool MetadataSaysLttng(const std::string& dir) {
  std::FILE* f = std::fopen(JoinPath(dir, "metadata").c_str(), "rb");
  if (!f) return false;
  std::string head(kMetadataHead, '\0');
  size_t n = std::fread(head.data(), 1, head.size(), f);
  std::fclose(f);
  head.resize(n);
  return head.find("lttng") != std::string::npos;
}

}  // namespace

bool LttngImportAvailable() {
#ifdef STRATA_HAVE_BABELTRACE2
  return true;
#else
  return false;
#endif
}

std::vector<std::string> FindCtfTraceDirs(const std::string& dir) {
  std::vector<std::string> out;
  size_t seen = 0;
  Walk(dir, 0, seen, out);
  return out;
}

bool IsLttngTraceDir(const std::string& dir) {
  if (!IsDirectory(dir) || IsStrataTraceDir(dir)) return false;
  for (const std::string& d : FindCtfTraceDirs(dir))
    if (MetadataSaysLttng(d)) return true;
  return false;
}

StatusOr<model::Trace> LoadLttngTrace(const std::string& path, const LoadOptions&) {
  std::vector<std::string> all = FindCtfTraceDirs(path), dirs;
  for (const std::string& d : all)
    if (MetadataSaysLttng(d)) dirs.push_back(d);
  if (dirs.empty()) dirs = all;  // CTF from another tracer: babeltrace2 may still read it
  if (dirs.empty()) return Err(StatusCode::kInvalidArgument, "{}: no CTF trace here (no metadata file)", path);

  model::Trace t;
  t.source = "lttng";
  t.path = path;
  lttng::LttngEvents ev;
  std::string stopped;
  STRATA_RETURN_IF_ERROR(lttng::ReadLttng(dirs, t.strings, ev, &stopped).WithContext(path));
  lttng::ReplayLttng(ev, t);
  t.events_read = ev.total;
  t.hostname = ev.hostname;
  if (!stopped.empty())
    t.warnings.push_back("babeltrace2 stopped reading the trace after " + std::to_string(ev.total) +
                         " events (what follows is missing): " + stopped);
  t.Finalize();
  return t;
}

}  // namespace strata::importers

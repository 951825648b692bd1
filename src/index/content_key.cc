#include "index/content_key.h"

#include <dirent.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <memory>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <xxhash.h>

#include "base/error.h"
#include "base/files.h"

namespace strata::index {
namespace {

struct StateDeleter {
  void operator()(XXH3_state_t* s) const { XXH3_freeState(s); }
};
using State = std::unique_ptr<XXH3_state_t, StateDeleter>;

bool IsIndexName(std::string_view name) {
  return name.starts_with(kIndexFileName);  // the index and its temporary file
}

Status HashFile(XXH3_state_t* st, const std::string& path, std::vector<char>& buf) {
  auto fd = OpenRegularFile(path);
  if (!fd.ok()) return fd.status();
  Status out = OkStatus();
  for (;;) {
    ssize_t n = ::read(*fd, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      out = ErrnoErr(errno, "cannot read {}", path);
      break;
    }
    if (n == 0) break;
    XXH3_128bits_update(st, buf.data(), static_cast<size_t>(n));
  }
  ::close(*fd);
  return out;
}

struct TraceFile {
  std::string rel;   // path relative to the trace ("" for a trace that is one file)
  std::string path;
  struct stat st;
};

// Every regular file of the trace, in name order at each level of a directory.
Status ListTrace(const std::string& dir, const std::string& rel, std::vector<TraceFile>& out, int depth) {
  if (depth > 32) return Err(StatusCode::kInvalidArgument, "{}: directories nested too deep", dir);
  DIR* d = ::opendir(dir.c_str());
  if (!d) return ErrnoErr(errno, "cannot open directory {}", dir);
  std::vector<std::string> names;
  while (dirent* e = ::readdir(d)) {
    std::string_view n = e->d_name;
    if (n == "." || n == ".." || IsIndexName(n)) continue;
    names.emplace_back(n);
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  for (const std::string& n : names) {
    TraceFile f{rel.empty() ? n : rel + "/" + n, JoinPath(dir, n), {}};
    if (::stat(f.path.c_str(), &f.st) != 0) continue;  // a dangling link: not part of the trace
    if (S_ISDIR(f.st.st_mode)) {
      if (Status k = ListTrace(f.path, f.rel, out, depth + 1); !k.ok()) return k;
    } else if (S_ISREG(f.st.st_mode)) {
      out.push_back(std::move(f));
    }
  }
  return OkStatus();
}

StatusOr<std::vector<TraceFile>> TraceFiles(const std::string& path) {
  std::vector<TraceFile> files;
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return StatError(errno, path);
  if (S_ISDIR(st.st_mode)) {
    if (Status k = ListTrace(path, "", files, 0); !k.ok()) return k;
  } else {
    files.push_back({"", path, st});
  }
  return files;
}

int FindBuildId(dl_phdr_info* info, size_t, void* out) {
  // The first object is the program itself.
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_NOTE) continue;
    const auto* p = reinterpret_cast<const uint8_t*>(info->dlpi_addr + ph.p_vaddr);
    const uint8_t* end = p + ph.p_memsz;
    while (p + sizeof(ElfW(Nhdr)) <= end) {
      ElfW(Nhdr) nh;
      std::memcpy(&nh, p, sizeof nh);
      const uint8_t* name = p + sizeof nh;
      const uint8_t* desc = name + ((nh.n_namesz + 3) & ~3u);
      if (desc + nh.n_descsz > end) break;
      if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 && std::memcmp(name, "GNU", 4) == 0) {
        *static_cast<uint64_t*>(out) = XXH3_64bits(desc, nh.n_descsz) | 1;
        return 1;
      }
      p = desc + ((nh.n_descsz + 3) & ~3u);
    }
  }
  return 1;  // only the program is looked at
}

}  // namespace

std::string ContentKey::Hex() const { return fmt::format("{:016x}{:016x}", hi, lo); }

uint64_t BuildIdentity() {
  static const uint64_t id = [] {
    uint64_t v = 0;
    dl_iterate_phdr(FindBuildId, &v);
    return v;
  }();
  return id;
}

StatusOr<uint64_t> TraceBytes(const std::string& path) {
  auto files = TraceFiles(path);
  if (!files.ok()) return files.status();
  uint64_t n = 0;
  for (const TraceFile& f : *files) n += static_cast<uint64_t>(f.st.st_size);
  return n;
}

StatusOr<ContentKey> KeyOfTrace(const std::string& path) {
  auto files = TraceFiles(path);
  if (!files.ok()) return files.status();
  State st(XXH3_createState());
  if (!st) return Err(StatusCode::kInternal, "out of memory");
  XXH3_128bits_reset(st.get());
  struct {
    uint32_t version;
    uint32_t pad;
    uint64_t build;
  } head{kIndexFormatVersion, 0, BuildIdentity()};
  XXH3_128bits_update(st.get(), &head, sizeof head);
  std::vector<char> buf(1 << 20);
  for (const TraceFile& f : *files) {
    // Each file's name and size before its bytes: moving bytes from one file
    // to the next changes the key.
    uint64_t size = static_cast<uint64_t>(f.st.st_size);
    XXH3_128bits_update(st.get(), f.rel.data(), f.rel.size() + 1);
    XXH3_128bits_update(st.get(), &size, sizeof size);
    if (Status k = HashFile(st.get(), f.path, buf); !k.ok()) return k;
  }
  XXH128_hash_t h = XXH3_128bits_digest(st.get());
  return ContentKey{h.high64, h.low64};
}

StatusOr<StatSignature> StatSignatureOf(const std::string& path, uint64_t build_identity) {
  auto files = TraceFiles(path);
  if (!files.ok()) return files.status();
  State st(XXH3_createState());
  if (!st) return Err(StatusCode::kInternal, "out of memory");
  XXH3_128bits_reset(st.get());
  // The strata build too: the signature path trusts an index's own key, which
  // another build of strata made with its own identity (and perhaps layout).
  const uint64_t build[2] = {kIndexFormatVersion, build_identity};
  XXH3_128bits_update(st.get(), build, sizeof build);
  int64_t newest = 0;
  auto ns = [](const timespec& t) { return static_cast<int64_t>(t.tv_sec) * 1000000000 + t.tv_nsec; };
  for (const TraceFile& f : *files) {
    int64_t v[6] = {static_cast<int64_t>(f.st.st_dev), static_cast<int64_t>(f.st.st_ino),
                    static_cast<int64_t>(f.st.st_size), ns(f.st.st_mtim), ns(f.st.st_ctim), 0};
    XXH3_128bits_update(st.get(), f.rel.data(), f.rel.size() + 1);
    XXH3_128bits_update(st.get(), v, sizeof v);
    newest = std::max({newest, v[3], v[4]});
  }
  timespec now;
  ::clock_gettime(CLOCK_REALTIME, &now);
  StatSignature sig;
  sig.hash = XXH3_128bits_digest(st.get()).low64 | 1;  // 0: no signature
  // Written more than 2 s ago: a later write gets other times on any file
  // system strata runs on (ext4, xfs, btrfs: ns; tmpfs: ns; FAT's 2 s excluded).
  sig.settled = ns(now) - newest > 2'000'000'000;
  return sig;
}

}  // namespace strata::index

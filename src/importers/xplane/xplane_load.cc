// The XSpace importer's entry points (xplane.h): format detection, and the
// bytes of a file (mapped, or inflated when gzip-compressed) or of memory
// handed to the builder (xplane_importer.cc).
#include <algorithm>
#include <limits>
#include <string>

#include "base/error.h"
#include "base/files.h"
#include "importers/kineto/byte_source.h"
#include "importers/xplane/xplane.h"
#include "importers/xplane/xplane_build.h"

namespace strata::importers {
namespace xplane {
namespace {

// protobuf's limit, which the importer keeps: sizes are ints.
Status CheckSize(std::string_view bytes, const std::string& what) {
  if (bytes.size() > static_cast<size_t>(std::numeric_limits<int>::max()))
    return Err(StatusCode::kUnsupported, "{}: an XSpace of {} bytes is larger than protobuf reads (2 GiB)", what, bytes.size());
  return OkStatus();
}

// mapped: the bytes are a read-only file mapping.
StatusOr<model::Trace> Parse(std::string_view bytes, const std::string& what, bool mapped = false) {
  if (Status s = CheckSize(bytes, what); !s.ok()) return s;
  model::Trace t;
  if (Status s = Build(t, bytes, what, nullptr, mapped); !s.ok()) return s;
  return t;
}

StatusOr<std::string> ReadAllBytes(kineto::ByteSource& src) {
  std::string out;
  size_t n = 0;
  for (;;) {
    if (out.size() - n < (1 << 20)) out.resize(std::max<size_t>(out.size() * 2, 1 << 20));
    auto r = src.Read(out.data() + n, out.size() - n);
    if (!r.ok()) return r.status();
    if (*r == 0) break;
    n += *r;
  }
  out.resize(n);
  return out;
}

// The XSpace in `bytes`, inflated into *storage when gzip-compressed.
StatusOr<std::string_view> Plain(std::string_view bytes, std::string* storage) {
  if (!kineto::IsGzip(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size())) return bytes;
  auto src = kineto::MemoryByteSource(bytes);
  auto all = ReadAllBytes(*src);
  if (!all.ok()) return all.status();
  *storage = std::move(*all);
  return std::string_view(*storage);
}

}  // namespace
}  // namespace xplane

bool LooksLikeXSpace(std::string_view h) {
  // Field 1 (planes), length-delimited: tag 0x0a, a varint length, then the
  // plane: optionally field 1 (id, a varint), then field 2 (name), a short
  // printable string.
  size_t i = 0;
  auto varint = [&h, &i](uint64_t* v) {
    *v = 0;
    for (int shift = 0; shift < 64 && i < h.size(); shift += 7) {
      auto b = static_cast<uint8_t>(h[i++]);
      *v |= uint64_t{b & 0x7fu} << shift;
      if (!(b & 0x80)) return true;
    }
    return false;
  };
  uint64_t v;
  if (h.size() < 4 || h[i++] != 0x0a || !varint(&v) || v < 2) return false;
  if (i < h.size() && h[i] == 0x08) {
    ++i;
    if (!varint(&v)) return false;
  }
  if (i >= h.size() || h[i++] != 0x12 || !varint(&v) || v == 0 || v > 256) return false;
  for (size_t k = 0; k < v && i + k < h.size(); ++k) {
    auto c = static_cast<unsigned char>(h[i + k]);
    if (c < 0x20 || c >= 0x7f) return false;
  }
  return true;
}

StatusOr<model::Trace> LoadXPlaneTrace(const std::string& path, const LoadOptions&) {
  // A plain file is parsed where it is mapped (no copy); gzip is inflated first.
  auto map = MappedFile::Open(path);
  if (map.ok() && !kineto::IsGzip(map->data(), map->size())) {
    auto t = xplane::Parse(std::string_view(reinterpret_cast<const char*>(map->data()), map->size()), path, true);
    if (t.ok()) t->path = path;
    return t;
  }
  auto src = kineto::OpenByteSource(path);
  if (!src.ok()) return src.status();
  auto bytes = xplane::ReadAllBytes(**src);
  if (!bytes.ok()) return bytes.status().WithContext(path);
  auto t = xplane::Parse(*bytes, path);
  if (t.ok()) t->path = path;
  return t;
}

Status MergeXSpace(model::Trace& t, std::string_view bytes, const XSpaceMerge& m) {
  if (m.process >= t.processes.size()) return Err(StatusCode::kInvalidArgument, "no process {} to merge into", m.process);
  std::string storage;
  auto all = xplane::Plain(bytes, &storage);
  if (!all.ok()) return all.status();
  const std::string what = "XSpace";
  if (Status s = xplane::CheckSize(*all, what); !s.ok()) return s;
  return xplane::Build(t, *all, what, &m, false);
}

StatusOr<model::Trace> ParseXPlaneTrace(std::string_view bytes, const LoadOptions&) {
  std::string storage;
  auto all = xplane::Plain(bytes, &storage);
  if (!all.ok()) return all.status();
  return xplane::Parse(*all, "XSpace");
}

}  // namespace strata::importers

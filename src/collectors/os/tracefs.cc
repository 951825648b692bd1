#include "collectors/os/tracefs.h"

#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>

#include "base/error.h"
#include "base/files.h"

namespace strata::collectors::os {

const TracepointField* TracepointFormat::Find(std::string_view field) const {
  for (const auto& f : fields)
    if (f.name == field) return &f;
  return nullptr;
}

namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

bool ParseU32(std::string_view s, uint32_t* out) {
  s = Trim(s);
  if (s.empty() || s.size() > 9) return false;
  uint32_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<uint32_t>(c - '0');
  }
  *out = v;
  return true;
}

// "key:value;" -> value, for key in {offset, size, signed}.
bool KeyValue(std::string_view part, std::string_view key, uint32_t* out) {
  part = Trim(part);
  if (part.substr(0, key.size()) != key || part.size() <= key.size() || part[key.size()] != ':') return false;
  return ParseU32(part.substr(key.size() + 1), out);
}

}  // namespace

StatusOr<TracepointFormat> ParseTracepointFormat(std::string_view text) {
  TracepointFormat f;
  bool have_id = false;
  size_t line_no = 0;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    ++line_no;
    line = Trim(line);
    if (line.rfind("name:", 0) == 0) {
      f.name = std::string(Trim(line.substr(5)));
    } else if (line.rfind("ID:", 0) == 0) {
      if (!ParseU32(line.substr(3), &f.id)) return Err(StatusCode::kCorrupt, "tracepoint format line {}: bad ID", line_no);
      have_id = true;
    } else if (line.rfind("field:", 0) == 0) {
      // field:<declaration>;\toffset:N;\tsize:N;\tsigned:N;
      std::string_view rest = line.substr(6);
      size_t semi = rest.find(';');
      if (semi == std::string_view::npos)
        return Err(StatusCode::kCorrupt, "tracepoint format line {}: field without ';'", line_no);
      std::string_view decl = Trim(rest.substr(0, semi));
      rest = rest.substr(semi + 1);
      TracepointField fld;
      bool have_off = false, have_size = false;
      while (!rest.empty()) {
        size_t s2 = rest.find(';');
        std::string_view part = rest.substr(0, s2);
        rest = s2 == std::string_view::npos ? std::string_view() : rest.substr(s2 + 1);
        uint32_t v;
        if (KeyValue(part, "offset", &v)) fld.offset = v, have_off = true;
        else if (KeyValue(part, "size", &v)) fld.size = v, have_size = true;
        else if (KeyValue(part, "signed", &v)) fld.is_signed = v != 0;
      }
      if (!have_off || !have_size)
        return Err(StatusCode::kCorrupt, "tracepoint format line {}: field without offset or size", line_no);
      fld.data_loc = decl.rfind("__data_loc", 0) == 0;
      // The name is the last identifier, before an optional [N].
      std::string_view d = decl;
      if (!d.empty() && d.back() == ']') {
        size_t lb = d.rfind('[');
        if (lb == std::string_view::npos)
          return Err(StatusCode::kCorrupt, "tracepoint format line {}: unbalanced '['", line_no);
        d = Trim(d.substr(0, lb));
        fld.is_array = true;
      }
      size_t start = d.size();
      while (start > 0 && (std::isalnum(static_cast<unsigned char>(d[start - 1])) || d[start - 1] == '_')) --start;
      if (start == d.size() || std::isdigit(static_cast<unsigned char>(d[start])))
        return Err(StatusCode::kCorrupt, "tracepoint format line {}: cannot read the field's name", line_no);
      fld.name = std::string(d.substr(start));
      f.fields.push_back(std::move(fld));
    }
  }
  if (!have_id) return Err(StatusCode::kCorrupt, "tracepoint format: no ID line");
  return f;
}

namespace {

bool IsTracefs(const std::string& dir) {
  struct statfs s;
  constexpr long kTracefsMagic = 0x74726163;  // TRACEFS_MAGIC
  return ::statfs(dir.c_str(), &s) == 0 && s.f_type == kTracefsMagic;
}

}  // namespace

StatusOr<std::string> FindTracefs(bool try_mount, bool* mounted) {
  if (mounted) *mounted = false;
  for (const char* d : {"/sys/kernel/tracing", "/sys/kernel/debug/tracing"})
    if (IsTracefs(d)) return std::string(d);
  // Mounted somewhere else?
  std::ifstream mounts("/proc/self/mounts");
  std::string dev, dir, type;
  std::string rest;
  while (mounts >> dev >> dir >> type) {
    std::getline(mounts, rest);
    if (type == "tracefs") return dir;
  }
  if (!try_mount) return Err(StatusCode::kUnavailable, "tracefs is not mounted");
  if (::mount("nodev", "/sys/kernel/tracing", "tracefs", 0, nullptr) != 0)
    return ErrnoErr(errno, "tracefs is not mounted and mounting it at /sys/kernel/tracing failed");
  if (mounted) *mounted = true;
  return std::string("/sys/kernel/tracing");
}

StatusOr<TracepointFormat> ReadTracepointFormat(const std::string& tracefs, std::string_view system,
                                                std::string_view name) {
  std::string path = tracefs + "/events/" + std::string(system) + "/" + std::string(name) + "/format";
  auto text = ReadFile(path);
  if (!text.ok()) return text.status();
  auto f = ParseTracepointFormat(*text);
  if (!f.ok()) return f.status().WithContext(path);
  return f;
}

int64_t ReadRawField(const uint8_t* raw, uint32_t raw_size, const TracepointField& f) {
  uint32_t size = f.data_loc ? 4 : f.size;
  if (size == 0 || size > 8 || f.offset > raw_size || raw_size - f.offset < size) return 0;
  uint64_t v = 0;
  std::memcpy(&v, raw + f.offset, size);  // little-endian
  if (f.is_signed && size < 8) {
    uint64_t sign = 1ull << (size * 8 - 1);
    if (v & sign) v |= ~((sign << 1) - 1);
  }
  return static_cast<int64_t>(v);
}

}  // namespace strata::collectors::os

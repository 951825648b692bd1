// What a trace index is keyed by: the content of the trace it was built from.
//
// A key is a 128-bit XXH3 hash of every byte of the trace (a file, or every
// file of a trace directory with its relative path and size, in name order;
// the index files themselves left out) mixed with the index format's version
// and the build of strata that made it: an index is trusted only by the same
// build, for the same bytes. A trace edited, appended to or replaced after it
// was indexed gets a new key, so its old index is never used.
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"

namespace strata::index {

struct ContentKey {
  uint64_t hi = 0;
  uint64_t lo = 0;
  bool operator==(const ContentKey&) const = default;
  std::string Hex() const;  // 32 hex digits
};

// The version of the index file's layout; bump on any change to it.
inline constexpr uint32_t kIndexFormatVersion = 5;  // 2: a checksum per section; 3: collectives; 4: compressed columns; 5: byte planes

// File names an index takes inside a trace directory and beside a trace file:
// left out of the key (and hidden from babeltrace2, which skips dot files).
inline constexpr const char* kIndexFileName = ".strata-index";
inline constexpr const char* kIndexSuffix = ".strata-index";

// Hashes the trace at `path` (a regular file or a directory). Errors when it
// cannot be read.
StatusOr<ContentKey> KeyOfTrace(const std::string& path);
// The bytes of the trace's files (those KeyOfTrace hashes).
StatusOr<uint64_t> TraceBytes(const std::string& path);

// What the file system says of the trace's files, hashed: every file's path,
// inode, size, modification and change times. The change time cannot be set
// by a program, so an equal signature means the bytes are unchanged, unless a
// file was written so close to when the signature was taken that a later
// write could keep its times ("racy", as git calls it): `settled` is false
// then, and only the content key can tell. Reads no file: an open of an
// indexed trace checks the signature instead of hashing gigabytes.
struct StatSignature {
  uint64_t hash = 0;
  bool settled = false;
};
// The identity of this build of strata (its GNU build ID), hashed; 0 if none.
uint64_t BuildIdentity();

// `build`: the strata build the signature is for (part of it: an index another
// build wrote is never trusted by signature).
StatusOr<StatSignature> StatSignatureOf(const std::string& path, uint64_t build = BuildIdentity());

}  // namespace strata::index

// Sequential input for the JSON importers: a plain file, a gzip file inflated
// on the fly, or bytes in memory. Importers never hold a whole decompressed
// trace: they pull it through a window of a few MiB.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "base/status.h"

namespace strata::importers::kineto {

class ByteSource {
 public:
  virtual ~ByteSource() = default;
  // Reads up to `cap` bytes into `dst`; 0 means the end of the input.
  virtual StatusOr<size_t> Read(char* dst, size_t cap) = 0;
  // Input bytes consumed so far and in all (compressed bytes for gzip), for progress.
  virtual uint64_t consumed() const = 0;
  virtual uint64_t total() const = 0;
};

bool IsGzip(const uint8_t* data, size_t size);

// Opens a file, inflating it when it starts with the gzip magic.
StatusOr<std::unique_ptr<ByteSource>> OpenByteSource(const std::string& path);
// Reads `data` (not copied; must outlive the source), inflating gzip data.
std::unique_ptr<ByteSource> MemoryByteSource(std::string_view data);

// The first bytes of a file, decompressed when it is gzip: enough to sniff the format.
StatusOr<std::string> ReadHead(const std::string& path, size_t max_bytes);

}  // namespace strata::importers::kineto

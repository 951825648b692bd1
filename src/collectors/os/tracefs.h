// tracefs: where it is, and the layout of a tracepoint's raw record.
//
// Raw tracepoint payloads (PERF_SAMPLE_RAW) differ across kernel versions and
// vendor kernels, so strata never compiles field offsets in: it reads
// events/<system>/<name>/format at run time and looks fields up by name.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace strata::collectors::os {

struct TracepointField {
  std::string name;
  uint32_t offset = 0;
  uint32_t size = 0;
  bool is_signed = false;
  bool data_loc = false;  // __data_loc: a u32 {offset:16, length:16} into the raw payload
  bool is_array = false;  // char comm[16] and the like
};

struct TracepointFormat {
  std::string name;
  uint32_t id = 0;
  std::vector<TracepointField> fields;
  const TracepointField* Find(std::string_view field) const;
};

// Parses a tracefs `format` file. Fails on a missing ID or a field line it cannot read.
StatusOr<TracepointFormat> ParseTracepointFormat(std::string_view text);

// The tracefs mount point (e.g. /sys/kernel/tracing). When none is mounted and
// `try_mount` is set, mounts tracefs at /sys/kernel/tracing (root only).
// `*mounted` tells whether this call did the mount.
StatusOr<std::string> FindTracefs(bool try_mount, bool* mounted);

// Reads and parses <tracefs>/events/<system>/<name>/format.
StatusOr<TracepointFormat> ReadTracepointFormat(const std::string& tracefs, std::string_view system,
                                                std::string_view name);

// A field of a raw payload, bounds-checked (0 when out of range), sign-extended when signed.
int64_t ReadRawField(const uint8_t* raw, uint32_t raw_size, const TracepointField& f);

}  // namespace strata::collectors::os

// TSDL (CTF 1.8 metadata) for strata traces: generation from the schema table,
// and a parser for the subset strata generates.
//
// The parser is not a general TSDL parser: it accepts exactly the constructs
// GenerateMetadata emits (byte-aligned integers, 64-bit floats, strings, the
// uuid array, the compact/extended event header) and reports anything else
// with its byte offset. Foreign CTF (LTTng) goes through the babeltrace2-based
// importer instead.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "format/schema.h"

namespace strata::format {

using Uuid = std::array<uint8_t, 16>;

std::string UuidToString(const Uuid& u);
Uuid NewRandomUuid();

struct TraceIdentity {
  Uuid uuid{};
  // CLOCK_REALTIME - CLOCK_MONOTONIC at trace start, in ns: babeltrace2 and
  // Trace Compass then print wall-clock times.
  int64_t clock_offset_ns = 0;
  std::string hostname;
};

std::string GenerateMetadata(const TraceIdentity& id);

// What the reader needs from a metadata file.
struct ParsedField {
  std::string name;
  FieldType type;
};
struct ParsedEvent {
  uint32_t id = 0;
  std::string name;
  std::vector<ParsedField> fields;
  int32_t fixed_size = -1;  // payload bytes when no string field, else -1
};
struct ParsedStream {
  uint32_t id = 0;
  bool declared = false;  // a stream block was seen
  std::vector<ParsedField> context;  // stream-specific context fields only
  std::vector<ParsedEvent> events;   // indexed by event id (gaps have empty names)
};
struct ParsedMetadata {
  Uuid uuid{};
  int major = 0, minor = 0;  // strata schema version from env
  int64_t clock_offset_ns = 0;
  std::string hostname;
  std::vector<ParsedStream> streams;  // indexed by stream id (gaps have no events)
};

// Parses metadata text; errors name the byte offset: "metadata: byte 812: expected ';'".
StatusOr<ParsedMetadata> ParseMetadata(std::string_view text);

}  // namespace strata::format

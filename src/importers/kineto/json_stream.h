// Streams a Chrome-trace JSON document ({"traceEvents": [...], ...} or a bare
// array of events) through a bounded window, handing the events to a sink in
// batches that simdjson parses in place. Memory stays at the window size plus
// what the sink builds, whatever the size of the file.
//
//   source bytes ──► window ──► sink.FastEvents()  (events it reads itself)
//                                   │ from an event it does not take:
//                                   ▼
//                               boundary scan (strings, nesting)
//                                   │ complete elements
//                                   ▼
//                    "[" elem, elem, ..., elem "]"  ──► sink.Batch()  (simdjson On-Demand)
//
// The scan only tracks strings and nesting so that a batch never ends inside
// an event; simdjson then validates and decodes each event. An event cut by
// the window's end is scanned alone once the window is refilled.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "base/status.h"
#include "importers/kineto/byte_source.h"

namespace strata::importers::kineto {

class JsonEventSink {
 public:
  virtual ~JsonEventSink() = default;
  // `doc[0, len)` is a JSON array of complete events; doc has at least
  // `capacity - len` >= simdjson's padding readable after it. `offset` is the
  // position of doc[1] in the decompressed input (for error messages). The
  // sink may overwrite the batch's bytes (to frame part of it as an array of its own).
  virtual Status Batch(char* doc, size_t len, size_t capacity, uint64_t offset) = 0;
  // Optional: consumes the complete events it can read at p (the start of an
  // event) without a batch, straight from the window, stopping at an event it
  // does not take or that [p, end) does not hold whole. Returns where it
  // stopped: the start of an event (*at_event, p itself if none was taken), or
  // the first non-whitespace byte after the last event taken, which is not a
  // ',' followed by '{' (so ']', a ',', something invalid, or end). *end is a
  // NUL byte and the window stays readable past it (simdjson's padding).
  virtual const char* FastEvents(const char* p, const char* end, bool* at_event) {
    (void)end;
    *at_event = true;
    return p;
  }
  // A top-level member other than traceEvents, as raw JSON (at most kMaxMeta bytes).
  virtual Status Meta(std::string_view key, std::string_view raw_value) = 0;
  virtual void Warn(const std::string& what) = 0;
};

struct JsonStreamOptions {
  size_t window = 1u << 20;  // bytes decompressed and scanned per batch (stays in cache)
  std::function<void(uint64_t consumed, uint64_t total)> progress;
};

inline constexpr size_t kMaxMeta = 64u << 20;

// Fails on malformed JSON structure, on a document that is not a trace, and on
// input errors (truncated gzip); problems inside single events are the sink's.
Status StreamTraceEvents(ByteSource& src, JsonEventSink& sink, const JsonStreamOptions& opt = {});

}  // namespace strata::importers::kineto

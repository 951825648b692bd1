// Parsers of the string fields of the framework level's events (schema_torch.cc):
// tensor-id lists and whole-graph encodings. Separate from the decoders so that
// the fuzz target exercises exactly what the importer runs on untrusted bytes.
#pragma once

#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

namespace strata::importers::strata_ctf {

// "7f3a2c0012a0 7f3a2c0013b0" -> ids appended to `out`. Malformed tokens are
// skipped and counted; returns the number skipped.
size_t ParseTensorIds(std::string_view s, std::vector<uint64_t>* out);

// Graph "nodes" (kinds joined by '\n') and "edges" ("from>to" joined by ' ').
// Edges naming a node that does not exist are dropped and counted.
struct GraphEncoding {
  std::vector<std::string_view> nodes;
  std::vector<std::pair<uint32_t, uint32_t>> edges;
  size_t bad_edges = 0;
};
GraphEncoding ParseGraph(std::string_view nodes, std::string_view edges);

}  // namespace strata::importers::strata_ctf

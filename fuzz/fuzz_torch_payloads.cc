// Fuzz target: the parsers of the framework level's string payloads (tensor-id
// lists, whole-graph encodings), which the importer runs on bytes from traces.
// Input: "<ids or nodes>\0<edges>".
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

#include "importers/strata/torch_payloads.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  size_t nul = in.find('\0');
  std::string_view first = in.substr(0, nul), second = nul == std::string_view::npos ? std::string_view() : in.substr(nul + 1);
  std::vector<uint64_t> ids;
  size_t bad = strata::importers::strata_ctf::ParseTensorIds(first, &ids);
  if (bad > first.size()) __builtin_trap();
  auto g = strata::importers::strata_ctf::ParseGraph(first, second);
  for (const auto& [a, b] : g.edges)
    if (a >= g.nodes.size() || b >= g.nodes.size()) __builtin_trap();  // edges only between existing nodes
  return 0;
}

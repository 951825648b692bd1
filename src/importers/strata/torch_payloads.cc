#include "importers/strata/torch_payloads.h"

#include <charconv>

namespace strata::importers::strata_ctf {
namespace {

// Calls fn(token) for each non-empty token separated by `sep`.
template <typename Fn>
void Split(std::string_view s, char sep, Fn fn) {
  size_t i = 0;
  while (i <= s.size()) {
    size_t j = s.find(sep, i);
    if (j == std::string_view::npos) j = s.size();
    if (j > i) fn(s.substr(i, j - i));
    i = j + 1;
  }
}

}  // namespace

size_t ParseTensorIds(std::string_view s, std::vector<uint64_t>* out) {
  size_t bad = 0;
  Split(s, ' ', [&](std::string_view tok) {
    uint64_t v = 0;
    auto r = std::from_chars(tok.data(), tok.data() + tok.size(), v, 16);
    if (r.ec != std::errc() || r.ptr != tok.data() + tok.size()) {
      ++bad;
      return;
    }
    out->push_back(v);
  });
  return bad;
}

GraphEncoding ParseGraph(std::string_view nodes, std::string_view edges) {
  GraphEncoding g;
  Split(nodes, '\n', [&](std::string_view tok) { g.nodes.push_back(tok); });
  Split(edges, ' ', [&](std::string_view tok) {
    size_t gt = tok.find('>');
    uint32_t a = 0, b = 0;
    if (gt == std::string_view::npos) {
      ++g.bad_edges;
      return;
    }
    auto ra = std::from_chars(tok.data(), tok.data() + gt, a);
    auto rb = std::from_chars(tok.data() + gt + 1, tok.data() + tok.size(), b);
    if (ra.ec != std::errc() || ra.ptr != tok.data() + gt || rb.ec != std::errc() ||
        rb.ptr != tok.data() + tok.size() || a >= g.nodes.size() || b >= g.nodes.size()) {
      ++g.bad_edges;
      return;
    }
    g.edges.emplace_back(a, b);
  });
  return g;
}

}  // namespace strata::importers::strata_ctf

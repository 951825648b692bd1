#include "importers/strata/graph_files.h"

#include <simdjson.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <system_error>

#include <fmt/format.h>

namespace strata::importers::strata_ctf {
namespace {

std::vector<std::filesystem::path> Entries(const std::filesystem::path& dir, bool dirs) {
  std::vector<std::filesystem::path> out;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    if (dirs ? it->is_directory(ec) : it->is_regular_file(ec)) out.push_back(it->path());
  std::sort(out.begin(), out.end());
  return out;
}

// One graph file -> a Graph, or false (malformed).
bool ReadGraph(simdjson::dom::element doc, model::Trace& t, model::Graph* g) {
  std::string_view name;
  simdjson::dom::array nodes;
  if (doc["name"].get_string().get(name) || doc["nodes"].get_array().get(nodes)) return false;
  g->name = t.strings.Intern(name);
  std::string_view module;
  if (!doc["module"].get_string().get(module)) g->module = t.strings.Intern(module);
  size_t n = nodes.size();
  for (simdjson::dom::element node : nodes) {
    simdjson::dom::array a;
    std::string_view node_name, type, device;
    simdjson::dom::array inputs;
    // [name, type, device, [input node indices]] and, optionally, the bytes of
    // the node's output (-1 unknown).
    if (node.get_array().get(a) || a.size() < 4 || a.size() > 5 || a.at(0).get_string().get(node_name) ||
        a.at(1).get_string().get(type) || a.at(2).get_string().get(device) || a.at(3).get_array().get(inputs))
      return false;
    uint32_t to = static_cast<uint32_t>(g->nodes.size());
    g->nodes.push_back(t.strings.Intern(type));
    g->node_names.push_back(t.strings.Intern(node_name));
    g->node_devices.push_back(t.strings.Intern(device));
    if (a.size() == 5) {
      int64_t bytes = -1;
      if (a.at(4).get_int64().get(bytes)) return false;
      g->node_bytes.resize(g->nodes.size() - 1, -1);
      g->node_bytes.push_back(bytes);
    }
    for (simdjson::dom::element in : inputs) {
      uint64_t from;
      if (in.get_uint64().get(from) || from >= n) return false;
      g->edges.emplace_back(static_cast<uint32_t>(from), to);
    }
  }
  if (!g->node_bytes.empty()) g->node_bytes.resize(g->nodes.size(), -1);
  return true;
}

}  // namespace

void ReadGraphFiles(const std::string& trace_dir, model::Trace& t) {
  for (const auto& dir : Entries(std::filesystem::path(trace_dir) / "graphs", true)) {
    std::string base = dir.filename().string();
    int64_t pid = 0;
    auto r = std::from_chars(base.data(), base.data() + base.size(), pid);
    int32_t process = model::kNone;
    if (r.ec == std::errc() && r.ptr == base.data() + base.size())
      for (size_t p = 0; p < t.processes.size(); ++p)
        if (t.processes[p].pid == pid && !t.processes[p].is_device) process = static_cast<int32_t>(p);
    if (process == model::kNone) {
      t.warnings.push_back(fmt::format("{}: not a process of the trace: its graphs are not read", dir.string()));
      continue;
    }
    for (const auto& f : Entries(dir, false)) {
      if (f.extension() != ".json") continue;
      simdjson::dom::parser parser;
      simdjson::dom::element doc;
      model::Graph g;
      g.process = static_cast<uint32_t>(process);
      if (parser.load(f.string()).get(doc) || !ReadGraph(doc, t, &g)) {
        t.warnings.push_back(fmt::format("{}: not a graph file strata wrote (not read)", f.string()));
        continue;
      }
      t.graphs.push_back(std::move(g));
    }
  }
}

}  // namespace strata::importers::strata_ctf

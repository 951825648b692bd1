#include "importers/kineto/comms.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace strata::importers::kineto {
namespace {

using model::kNone;
using model::StringId;

constexpr StringId kAbsent = model::StringPool::kNotFound;
// Ancestors of a launch searched for its collective's records: the title is
// the launch's parent and record_param_comms its grandparent in every torch
// seen; a little slack for a range some version puts between them.
constexpr int kMaxHops = 4;

bool IsNcclKernel(std::string_view n) { return n.starts_with("ncclKernel_") || n.starts_with("ncclDevKernel_"); }

// record_param_comms' names in c10d's spelling: "allreduce" -> "all_reduce",
// "_allgather_base" -> "_all_gather_base", "alltoall_base" -> "all_to_all"
// (ProcessGroupNCCL titles both all-to-alls "nccl:all_to_all").
std::string C10dSpelling(std::string_view name) {
  static constexpr std::pair<std::string_view, std::string_view> kWords[] = {
      {"alltoall_base", "all_to_all"}, {"alltoall", "all_to_all"},
      {"allreduce", "all_reduce"},     {"allgather", "all_gather"}};
  std::string out;
  for (size_t i = 0; i < name.size();) {
    bool replaced = false;
    for (auto [from, to] : kWords)
      if (name.substr(i).starts_with(from)) {
        out += to;
        i += from.size();
        replaced = true;
        break;
      }
    if (!replaced) out += name[i++];
  }
  return out;
}

// The collective a kernel's name says, in c10d's spelling:
// "ncclKernel_AllReduce_RING_LL_Sum_float(...)" -> "all_reduce",
// "ncclDevKernel_SendRecv(...)" -> "send_recv" (a send, a receive or an
// all-to-all: the kernel does not say which).
std::string KernelCollective(std::string_view kernel) {
  size_t start = kernel.find('_') + 1;
  std::string_view word = kernel.substr(start, kernel.find_first_of("_(", start) - start);
  std::string out;
  for (char c : word) {
    if (c >= 'A' && c <= 'Z') {
      if (!out.empty()) out += '_';
      out += static_cast<char>(c - 'A' + 'a');
    } else {
      out += c;
    }
  }
  return out.empty() ? "collective" : out;
}

// Bytes per element of a type as torch names it: record_param_comms' "dtype"
// is the ScalarType's name ("Float", "BFloat16"), record_shapes' "Input type"
// the C++ type's ("float", "c10::BFloat16", "unsigned char"). 0: unknown.
int64_t DtypeBytes(std::string_view type) {
  std::string s;
  for (char c : type) s += c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
  std::string_view v = s;
  if (v.starts_with("c10::")) v.remove_prefix(5);
  if (v.starts_with("at::")) v.remove_prefix(4);
  if (v.starts_with("float8")) return 1;
  static constexpr std::pair<std::string_view, int64_t> kSizes[] = {
      {"byte", 1},          {"char", 1},         {"bool", 1},           {"uint8", 1},          {"int8", 1},
      {"unsigned char", 1}, {"signed char", 1},  {"quint8", 1},         {"qint8", 1},          {"half", 2},
      {"bfloat16", 2},      {"float16", 2},      {"short", 2},          {"int16", 2},          {"uint16", 2},
      {"unsigned short", 2}, {"float", 4},       {"float32", 4},        {"int", 4},            {"int32", 4},
      {"uint32", 4},        {"unsigned int", 4}, {"qint32", 4},         {"complexhalf", 4},    {"double", 8},
      {"float64", 8},       {"long", 8},         {"long int", 8},       {"long long", 8},      {"int64", 8},
      {"uint64", 8},        {"unsigned long", 8}, {"complexfloat", 8},  {"complex<float>", 8}, {"complexdouble", 16},
      {"complex<double>", 16}, {"complex<c10::half>", 4}};
  for (auto [name, bytes] : kSizes)
    if (v == name) return bytes;
  return 0;
}

// record_shapes' "Input Dims" ("[[19618307]]", "[[384], [], [2, 3]]") and
// "Input type" (["float", "", "long"]) as the inputs' bytes and the number of
// tensors among them. An input that is an empty list (a scalar or no tensor)
// counts for nothing; a list of lists (a TensorList) counts each of them.
void InputBytes(std::string_view dims, std::string_view types, int64_t* bytes, uint32_t* tensors) {
  std::vector<int64_t> elements;  // per input
  int depth = 0;
  int64_t product = 1;
  bool numbers = false, overflow = false;
  for (size_t i = 0; i < dims.size(); ++i) {
    char c = dims[i];
    if (c == '[') {
      if (++depth == 2) elements.push_back(0);
      product = 1;
      numbers = false;
    } else if (c == ']') {
      if (numbers && depth >= 2 && !elements.empty()) {
        elements.back() += product;
        ++*tensors;
      }
      numbers = false;
      --depth;
    } else if (c >= '0' && c <= '9') {
      int64_t n = 0;
      for (; i < dims.size() && dims[i] >= '0' && dims[i] <= '9'; ++i)
        overflow |= __builtin_mul_overflow(n, 10, &n) || __builtin_add_overflow(n, dims[i] - '0', &n);
      --i;
      overflow |= __builtin_mul_overflow(product, n, &product);
      numbers = true;
    }
  }
  if (overflow) return;
  size_t input = 0;
  int64_t sum = 0;
  for (size_t i = 0; i < types.size() && input < elements.size(); ++i) {
    if (types[i] != '"') continue;
    size_t end = types.find('"', i + 1);
    if (end == std::string_view::npos) break;
    int64_t b = 0;
    if (__builtin_mul_overflow(elements[input++], DtypeBytes(types.substr(i + 1, end - i - 1)), &b) ||
        __builtin_add_overflow(sum, b, &sum))
      return;
    i = end;
  }
  *bytes = sum;
}

struct Row {
  uint32_t device_row;
  uint32_t process;  // kNoProcess until found, for a kernel without its launch
  StringId name;
  int64_t issued;    // the launch's time (the kernel's without one): the issue order
  bool has_seq;
  uint64_t seq;
  int64_t bytes;
  uint32_t tensors;
};

}  // namespace

size_t AddNcclCollectives(model::Trace& t) {
  const model::SliceTable& s = t.slices;
  const model::DeviceActivityTable& d = t.device;
  // Most traces have no NCCL kernel: one byte per kernel name says which are.
  std::vector<uint8_t> nccl_name(t.strings.size(), 0);  // 0 not seen, 1 no, 2 yes
  std::vector<Row> rows;
  for (uint32_t r = 0; r < d.size(); ++r) {
    uint32_t k = d.slice[r];
    if (s.kind[k] != model::SliceKind::kKernel) continue;
    uint8_t& is = nccl_name[s.name[k]];
    if (is == 0) is = IsNcclKernel(t.strings.Get(s.name[k])) ? 2 : 1;
    if (is == 2) rows.push_back({r, model::kNoProcess, 0, s.ts[k], false, 0, 0, 1});
  }
  if (rows.empty()) return 0;

  const StringId k_rpc = t.strings.Find("record_param_comms");
  const StringId k_collective = t.strings.Find("Collective name");
  const StringId k_nelems = t.strings.Find("In msg nelems");
  const StringId k_dtype = t.strings.Find("dtype");
  const StringId k_seq = t.strings.Find("Seq");
  const StringId k_dims = t.strings.Find("Input Dims");
  const StringId k_types = t.strings.Find("Input type");
  auto num_arg = [&t](int32_t slice, StringId key, double* v) {
    if (key == kAbsent) return false;
    int32_t a = t.FindArg(static_cast<uint32_t>(slice), key);
    if (a == kNone || std::isnan(t.args.num[static_cast<size_t>(a)])) return false;
    *v = t.args.num[static_cast<size_t>(a)];
    return true;
  };
  auto str_id_arg = [&t](int32_t slice, StringId key) -> StringId {
    if (key == kAbsent) return 0;
    int32_t a = t.FindArg(static_cast<uint32_t>(slice), key);
    return a == kNone ? 0 : t.args.str[static_cast<size_t>(a)];
  };
  auto str_arg = [&t, &str_id_arg](int32_t slice, StringId key) { return t.strings.Get(str_id_arg(slice, key)); };
  std::unordered_map<StringId, StringId> titles;  // a collective or kernel name -> its row name
  auto title = [&t, &titles](StringId from, auto make) {
    auto [it, fresh] = titles.try_emplace(from, 0);
    if (fresh) it->second = t.strings.Intern("nccl:" + make(t.strings.Get(from)));
    return it->second;
  };
  std::map<std::pair<uint32_t, uint32_t>, uint64_t> launchers;  // (device process, host process) -> kernels
  for (Row& row : rows) {
    uint32_t k = d.slice[row.device_row];
    int32_t launch = d.launch[row.device_row];
    int32_t titled = kNone, rpc = kNone;
    if (launch != kNone) {
      auto l = static_cast<size_t>(launch);
      row.process = t.tracks[s.track[l]].process;
      row.issued = s.ts[l];
      launchers[{t.tracks[s.track[k]].process, row.process}]++;
      int32_t p = s.parent[l];
      for (int hop = 0; p != kNone && hop < kMaxHops; ++hop, p = s.parent[static_cast<size_t>(p)]) {
        StringId n = s.name[static_cast<size_t>(p)];
        if (n == k_rpc) {
          rpc = p;
          break;
        }
        if (titled == kNone && t.strings.Get(n).starts_with("nccl:")) titled = p;
      }
    }
    StringId collective = rpc == kNone ? 0 : str_id_arg(rpc, k_collective);
    if (titled != kNone) row.name = s.name[static_cast<size_t>(titled)];
    else if (collective != 0) row.name = title(collective, C10dSpelling);
    else row.name = title(s.name[k], KernelCollective);
    if (rpc != kNone) {
      double n, seq;
      if (num_arg(rpc, k_nelems, &n) && n > 0 && n < 9e15)
        row.bytes = static_cast<int64_t>(n) * DtypeBytes(str_arg(rpc, k_dtype));
      if (num_arg(rpc, k_seq, &seq) && seq >= 0 && seq < 9e15) {
        row.has_seq = true;
        row.seq = static_cast<uint64_t>(seq);
      }
    }
    if (titled != kNone) {
      int64_t bytes = 0;
      uint32_t tensors = 0;
      InputBytes(str_arg(titled, k_dims), str_arg(titled, k_types), &bytes, &tensors);
      if (row.bytes <= 0) row.bytes = bytes;
      if (tensors > 0) row.tensors = tensors;
    }
  }

  // A kernel whose launch the trace lacks (an event-sampled trace drops some)
  // belongs to the host process that launched its device's other collectives:
  // a row in a process of its own would count as another rank.
  auto launcher_of = [&launchers](uint32_t device_process) {
    uint32_t best = model::kNoProcess;
    uint64_t most = 0;
    for (auto& [key, n] : launchers)
      if ((device_process == model::kNoProcess || key.first == device_process) && n > most) {
        best = key.second;
        most = n;
      }
    return best;
  };
  for (Row& row : rows) {
    if (row.process != model::kNoProcess) continue;
    uint32_t device_process = t.tracks[s.track[d.slice[row.device_row]]].process;
    row.process = launcher_of(device_process);
    if (row.process == model::kNoProcess) row.process = launcher_of(model::kNoProcess);
    if (row.process == model::kNoProcess) row.process = device_process;
  }

  // Sequence numbers: the records' where each of a process's rows has one of
  // its own (one process group), else the issue order, which every rank of a
  // group shares (several groups number their collectives apart, and a
  // coalesced record launches several kernels).
  std::stable_sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) {
    return a.process != b.process ? a.process < b.process : a.issued < b.issued;
  });
  std::vector<uint64_t> seqs;
  for (size_t i = 0; i < rows.size();) {
    size_t j = i;
    while (j < rows.size() && rows[j].process == rows[i].process) ++j;
    seqs.clear();
    bool recorded = true;
    for (size_t k = i; k < j && recorded; ++k) {
      recorded = rows[k].has_seq;
      seqs.push_back(rows[k].seq);
    }
    std::sort(seqs.begin(), seqs.end());
    recorded = recorded && std::adjacent_find(seqs.begin(), seqs.end()) == seqs.end();
    for (size_t k = i; k < j; ++k) rows[k].seq = recorded ? rows[k].seq : k - i;
    if (recorded)
      std::stable_sort(rows.begin() + static_cast<ptrdiff_t>(i), rows.begin() + static_cast<ptrdiff_t>(j),
                       [](const Row& a, const Row& b) { return a.seq < b.seq; });
    i = j;
  }

  model::CollectiveTable& c = t.collectives;
  for (const Row& row : rows) {
    uint32_t k = d.slice[row.device_row];
    c.process.push_back(row.process);
    c.name.push_back(row.name);
    c.seq.push_back(row.seq);
    c.ts.push_back(s.ts[k]);
    c.dur.push_back(s.dur[k]);
    c.track.push_back(s.track[k]);
    c.end_track.push_back(s.track[k]);
    c.bytes.push_back(row.bytes);
    c.tensors.push_back(row.tensors);
  }
  return rows.size();
}

}  // namespace strata::importers::kineto

// Communication: torch.distributed's works (comm_begin where the backend began
// the work, comm_end on the thread that completed it, in any stream order)
// become rows of Trace::collectives and spans on the timeline; each process's rank (process_rank) its
// Process::rank.
#include <algorithm>
#include <map>
#include <utility>
#include <vector>

#include "format/schema.h"
#include "importers/common/op_collectives.h"
#include "importers/strata/decoder.h"

namespace strata::importers::strata_ctf {
namespace {

using format::EventView;
using format::kProcessStream;
using format::kThreadStream;

struct CommEnd {
  int64_t ts = 0;
  uint32_t track = 0;
  model::StringId name = 0;
};

struct CommState {
  std::map<std::pair<uint32_t, uint64_t>, CommEnd> ends;  // (process, seq) -> completion
  uint64_t unmatched_ends = 0, renamed = 0;
};

}  // namespace

void RegisterCommDecoders(DecoderRegistry& r) {
  r.On(kProcessStream, "process_rank", [](LoadContext& ctx, StreamState& ss, const EventView& ev) {
    PayloadReader p(ev);
    auto rank = static_cast<int64_t>(p.Get<uint64_t>());
    if (rank >= 0) ctx.trace().processes[ss.process->index].rank = rank;
  });
  r.On(kThreadStream, "comm_begin", [](LoadContext& ctx, StreamState& ss, const EventView& ev) {
    PayloadReader p(ev);
    model::StringId name = ctx.Name(*ss.process, p.Get<uint32_t>());
    model::CollectiveTable& c = ctx.trace().collectives;
    c.process.push_back(ss.process->index);
    c.name.push_back(name);
    c.seq.push_back(p.Get<uint64_t>());
    c.ts.push_back(static_cast<int64_t>(ev.ts));
    c.dur.push_back(-1);
    c.track.push_back(ss.track);
    c.end_track.push_back(UINT32_MAX);
    c.bytes.push_back(static_cast<int64_t>(std::min<uint64_t>(p.Get<uint64_t>(), INT64_MAX)));
    c.tensors.push_back(p.Get<uint32_t>());
  });
  r.On(kThreadStream, "comm_end", [](LoadContext& ctx, StreamState& ss, const EventView& ev) {
    PayloadReader p(ev);
    model::StringId name = ctx.Name(*ss.process, p.Get<uint32_t>());
    uint64_t seq = p.Get<uint64_t>();
    ctx.Ext<CommState>().ends[{ss.process->index, seq}] = {static_cast<int64_t>(ev.ts), ss.track, name};
  });
  r.BeforeFinalize([](LoadContext& ctx) {
    auto& st = ctx.Ext<CommState>();
    model::CollectiveTable& c = ctx.trace().collectives;
    for (size_t i = 0; i < c.size(); ++i) {
      auto it = st.ends.find({c.process[i], c.seq[i]});
      if (it == st.ends.end()) continue;
      if (it->second.name != c.name[i]) ++st.renamed;
      c.dur[i] = std::max<int64_t>(0, it->second.ts - c.ts[i]);
      c.end_track[i] = it->second.track;
      st.ends.erase(it);
    }
    st.unmatched_ends += st.ends.size();
    if (st.unmatched_ends)
      ctx.Warn(std::to_string(st.unmatched_ends) + " collective completions had no enqueue (dropped)");
    if (st.renamed) ctx.Warn(std::to_string(st.renamed) + " collective completions named another work than their enqueue");
    // The works as spans of the threads that ran them, for the timeline. gloo
    // begins and completes each work on one of its worker threads (one work at
    // a time): the span is that. A work completed on another thread than the
    // one it began on (a caller's enqueue, a watchdog's completion) spans from
    // the later of its begin and that thread's previous completion.
    std::map<uint32_t, std::vector<size_t>> by_end_track;
    for (size_t i = 0; i < c.size(); ++i)
      if (c.dur[i] >= 0 && c.end_track[i] != UINT32_MAX) by_end_track[c.end_track[i]].push_back(i);
    for (auto& [track, rows] : by_end_track) {
      std::sort(rows.begin(), rows.end(), [&c](size_t a, size_t b) { return c.ts[a] + c.dur[a] < c.ts[b] + c.dur[b]; });
      int64_t busy_until = INT64_MIN;
      for (size_t i : rows) {
        int64_t end = c.ts[i] + c.dur[i];
        int64_t begin = c.track[i] == track ? c.ts[i] : std::max(c.ts[i], busy_until);
        ctx.AddSlice({begin, c.name[i], model::SliceKind::kSpan, c.seq[i]}, end, track, 0);
        busy_until = end;
      }
    }
    SortCollectives(c);  // by process, then sequence
  });
}

}  // namespace strata::importers::strata_ctf

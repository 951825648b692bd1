// Decoders of the core event classes: spans, steps, instants, counters, flows;
// process facts (names, thread names, process info, collector status).
#include <unordered_map>

#include "format/schema.h"
#include "importers/strata/decoder.h"

namespace strata::importers::strata_ctf {
namespace {

using format::EventView;
using format::kProcessStream;
using format::kThreadStream;

struct PendingFlow {
  uint64_t id;
  uint32_t track;
  int64_t ts;
  bool out;
};

struct CoreState {
  std::vector<PendingFlow> flows;
  model::StringId step_name = 0;
  uint64_t unmatched_ends = 0;
};

// Closes the innermost open slice of the stream.
void CloseTop(LoadContext& ctx, StreamState& ss, int64_t ts) {
  const OpenSlice& o = ss.stack.back();
  ctx.AddSlice(o, ts, ss.track, ss.stack.size() - 1);
  ss.stack.pop_back();
}

}  // namespace

void RegisterCoreDecoders(DecoderRegistry& r) {
  r.On(kThreadStream, "span_begin", [](LoadContext& ctx, StreamState& ss, const EventView& ev) {
    PayloadReader p(ev);
    ss.stack.push_back({static_cast<int64_t>(ev.ts), ctx.Name(*ss.process, p.Get<uint32_t>()), model::SliceKind::kSpan, 0});
  });
  r.On(kThreadStream, "span_begin16", [](LoadContext& ctx, StreamState& ss, const EventView& ev) {
    PayloadReader p(ev);
    ss.stack.push_back({static_cast<int64_t>(ev.ts), ctx.Name(*ss.process, p.Get<uint16_t>()), model::SliceKind::kSpan, 0});
  });
  r.On(kThreadStream, "span_begin_arg", [](LoadContext& ctx, StreamState& ss, const EventView& ev) {
    PayloadReader p(ev);
    model::StringId name = ctx.Name(*ss.process, p.Get<uint32_t>());
    ss.stack.push_back({static_cast<int64_t>(ev.ts), name, model::SliceKind::kSpan, p.Get<uint64_t>()});
  });
  r.On(kThreadStream, "span_end", [](LoadContext& ctx, StreamState& ss, const EventView& ev) {
    if (ss.stack.empty()) {
      ++ctx.Ext<CoreState>().unmatched_ends;
      return;
    }
    CloseTop(ctx, ss, static_cast<int64_t>(ev.ts));
  });
  auto step_begin = [](bool wide) {
    return [wide](LoadContext& ctx, StreamState& ss, const EventView& ev) {
      auto& cs = ctx.Ext<CoreState>();
      if (!cs.step_name) cs.step_name = ctx.trace().strings.Intern("step");
      PayloadReader p(ev);
      uint64_t n = wide ? p.Get<uint64_t>() : p.Get<uint32_t>();
      ss.stack.push_back({static_cast<int64_t>(ev.ts), cs.step_name, model::SliceKind::kStep, n});
    };
  };
  auto step_end = [](bool wide) {
    // Closes the innermost open step with this number, and anything left open inside it.
    return [wide](LoadContext& ctx, StreamState& ss, const EventView& ev) {
      PayloadReader p(ev);
      uint64_t n = wide ? p.Get<uint64_t>() : p.Get<uint32_t>();
      for (size_t k = ss.stack.size(); k-- > 0;) {
        if (ss.stack[k].kind == model::SliceKind::kStep && ss.stack[k].arg == n) {
          while (ss.stack.size() > k) CloseTop(ctx, ss, static_cast<int64_t>(ev.ts));
          return;
        }
      }
      ++ctx.Ext<CoreState>().unmatched_ends;
    };
  };
  r.On(kThreadStream, "step_begin", step_begin(true));
  r.On(kThreadStream, "step_begin32", step_begin(false));
  r.On(kThreadStream, "step_end", step_end(true));
  r.On(kThreadStream, "step_end32", step_end(false));
  r.On(kThreadStream, "instant", [](LoadContext& ctx, StreamState& ss, const EventView& ev) {
    ctx.trace().instants.Add(static_cast<int64_t>(ev.ts), ss.track, ctx.Name(*ss.process, PayloadReader(ev).Get<uint32_t>()));
  });
  r.On(kThreadStream, "counter", [](LoadContext& ctx, StreamState& ss, const EventView& ev) {
    PayloadReader p(ev);
    model::StringId name = ctx.Name(*ss.process, p.Get<uint32_t>());
    double v = p.Get<double>();
    ctx.trace().counters.Add(ctx.CounterSeries(ss.process->index, name), static_cast<int64_t>(ev.ts), v);
  });
  auto narrow_counter = [](bool i32) {
    return [i32](LoadContext& ctx, StreamState& ss, const EventView& ev) {
      PayloadReader p(ev);
      model::StringId name = ctx.Name(*ss.process, p.Get<uint16_t>());
      double v = i32 ? p.Get<int32_t>() : p.Get<int16_t>();
      ctx.trace().counters.Add(ctx.CounterSeries(ss.process->index, name), static_cast<int64_t>(ev.ts), v);
    };
  };
  r.On(kThreadStream, "counter16", narrow_counter(true));
  r.On(kThreadStream, "counter8", narrow_counter(false));
  auto flow = [](bool out, bool wide) {
    return [out, wide](LoadContext& ctx, StreamState& ss, const EventView& ev) {
      PayloadReader p(ev);
      uint64_t id = wide ? p.Get<uint64_t>() : p.Get<uint32_t>();
      ctx.Ext<CoreState>().flows.push_back({id, ss.track, static_cast<int64_t>(ev.ts), out});
    };
  };
  r.On(kThreadStream, "flow_out", flow(true, true));
  r.On(kThreadStream, "flow_in", flow(false, true));
  r.On(kThreadStream, "flow_out32", flow(true, false));
  r.On(kThreadStream, "flow_in32", flow(false, false));

  r.On(kProcessStream, "name_def", [](LoadContext& ctx, StreamState& ss, const EventView& ev) {
    PayloadReader p(ev);
    uint32_t id = p.Get<uint32_t>();
    std::string_view text = p.Str();
    if (id >= (1u << 26)) return;  // ids are dense; a huge one is garbage
    auto& names = ss.process->names;
    if (names.size() <= id) names.resize(id + 1, UINT32_MAX);
    names[id] = ctx.trace().strings.Intern(text);
  });
  r.On(kProcessStream, "thread_name", [](LoadContext& ctx, StreamState& ss, const EventView& ev) {
    PayloadReader p(ev);
    uint32_t tid = p.Get<uint32_t>();
    uint32_t t = ctx.Track(ss.process->index, model::TrackKind::kThread, tid, model::kNone);
    ctx.trace().tracks[t].name = ctx.trace().strings.Intern(p.Str());
  });
  r.On(kProcessStream, "process_info", [](LoadContext& ctx, StreamState& ss, const EventView& ev) {
    PayloadReader p(ev);
    model::Process& proc = ctx.trace().processes[ss.process->index];
    proc.ppid = p.Get<uint32_t>();
    proc.start_realtime_ns = static_cast<int64_t>(p.Get<uint64_t>());
    proc.name = ctx.trace().strings.Intern(p.Str());
    proc.cmdline = ctx.trace().strings.Intern(p.Str());
  });
  r.On(kProcessStream, "collector_status", [](LoadContext& ctx, StreamState& ss, const EventView& ev) {
    PayloadReader p(ev);
    model::CollectorStatus cs;
    cs.process = ss.process->index;
    cs.collector = std::string(p.Str());
    cs.state = std::string(p.Str());
    cs.detail = std::string(p.Str());
    ctx.trace().collectors.push_back(std::move(cs));
  });

  // A thread that ended mid-span (killed, crashed): close at its last event.
  r.OnStreamEnd([](LoadContext& ctx, StreamState& ss) {
    if (ss.stack.empty()) return;
    ctx.Warn(ss.path + ": " + std::to_string(ss.stack.size()) + " slices never ended (closed at the thread's last event)");
    while (!ss.stack.empty()) CloseTop(ctx, ss, ss.last_ts);
  });

  // A flow event belongs to the innermost slice open at its time on its thread.
  r.AfterFinalize([](LoadContext& ctx) {
    auto& cs = ctx.Ext<CoreState>();
    model::Trace& t = ctx.trace();
    std::unordered_map<uint64_t, int32_t> outs;
    for (const PendingFlow& f : cs.flows)
      if (f.out) outs[f.id] = t.SliceAt(f.track, f.ts);
    for (const PendingFlow& f : cs.flows) {
      if (f.out) continue;
      auto it = outs.find(f.id);
      t.flows.Add(f.id, it == outs.end() ? model::kNone : it->second, t.SliceAt(f.track, f.ts));
    }
    if (cs.unmatched_ends > 0) ctx.Warn(std::to_string(cs.unmatched_ends) + " span/step ends had no matching begin");
  });
}

}  // namespace strata::importers::strata_ctf

// The babeltrace2 side of the LTTng importer: a graph of one source.ctf.fs per
// trace directory, a flt.utils.muxer putting their messages in time order, and
// a simple sink (this file's Reader) that keeps what the replay needs.
//
// Field lookups by name are done once per event class and stream class (their
// member indices cached); per event, only indexed borrows remain.
#include "importers/lttng/lttng_reader.h"

#include "base/error.h"
#include "base/files.h"

#ifdef STRATA_HAVE_BABELTRACE2
#include <babeltrace2/babeltrace.h>
#include <fmt/format.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <string>
#include <limits>
#include <string_view>
#include <unordered_map>
#endif

namespace strata::importers::lttng {

#ifndef STRATA_HAVE_BABELTRACE2

Status ReadLttngInProcess(const std::vector<std::string>&, model::StringPool&, LttngEvents&, std::string*) {
  return Err(StatusCode::kUnavailable,
             "strata was built without libbabeltrace2, so it cannot read LTTng traces (install libbabeltrace2-dev and "
             "rebuild)");
}

#else

namespace {

// Rendered values of compound fields (arrays, structures) are cut here: an
// argument is for reading, and a fuzzed trace may declare a huge array.
constexpr size_t kMaxText = 256;
constexpr int kMaxDepth = 8;

bool StartsWith(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }
bool EndsWith(std::string_view s, std::string_view p) { return s.size() >= p.size() && s.substr(s.size() - p.size()) == p; }

int MemberIndex(const bt_field_class* st, std::string_view name) {
  if (!st || bt_field_class_get_type(st) != BT_FIELD_CLASS_TYPE_STRUCTURE) return -1;
  uint64_t n = bt_field_class_structure_get_member_count(st);
  for (uint64_t i = 0; i < n; ++i) {
    const bt_field_class_structure_member* m = bt_field_class_structure_borrow_member_by_index_const(st, i);
    if (name == bt_field_class_structure_member_get_name(m)) return static_cast<int>(i);
  }
  return -1;
}

const bt_field* Member(const bt_field* st, int idx) {
  if (!st || idx < 0 || bt_field_get_class_type(st) != BT_FIELD_CLASS_TYPE_STRUCTURE) return nullptr;
  return bt_field_structure_borrow_member_field_by_index_const(st, static_cast<uint64_t>(idx));
}

bool IntOf(const bt_field* f, int64_t* v) {
  if (!f) return false;
  bt_field_class_type t = bt_field_get_class_type(f);
  if (bt_field_class_type_is(t, BT_FIELD_CLASS_TYPE_SIGNED_INTEGER)) {
    *v = bt_field_integer_signed_get_value(f);
    return true;
  }
  if (bt_field_class_type_is(t, BT_FIELD_CLASS_TYPE_UNSIGNED_INTEGER)) {
    *v = static_cast<int64_t>(bt_field_integer_unsigned_get_value(f));
    return true;
  }
  if (t == BT_FIELD_CLASS_TYPE_BOOL) {
    *v = bt_field_bool_get_value(f) ? 1 : 0;
    return true;
  }
  return false;
}

int64_t IntOr(const bt_field* f, int64_t d) {
  int64_t v;
  return IntOf(f, &v) ? v : d;
}

std::string_view StrOf(const bt_field* f) {
  if (!f || bt_field_get_class_type(f) != BT_FIELD_CLASS_TYPE_STRING) return {};
  return {bt_field_string_get_value(f), bt_field_string_get_length(f)};
}

bool RealOf(const bt_field* f, double* v) {
  if (!f) return false;
  bt_field_class_type t = bt_field_get_class_type(f);
  if (t == BT_FIELD_CLASS_TYPE_DOUBLE_PRECISION_REAL) {
    *v = bt_field_real_double_precision_get_value(f);
    return true;
  }
  if (t == BT_FIELD_CLASS_TYPE_SINGLE_PRECISION_REAL) {
    *v = bt_field_real_single_precision_get_value(f);
    return true;
  }
  return false;
}

// A field as text: numbers, strings, and compound fields in babeltrace2's
// pretty style, cut at kMaxText.
void Render(const bt_field* f, std::string& out, int depth) {
  if (!f || out.size() >= kMaxText) return;
  int64_t i;
  double d;
  bt_field_class_type t = bt_field_get_class_type(f);
  if (IntOf(f, &i)) {
    out += bt_field_class_type_is(t, BT_FIELD_CLASS_TYPE_UNSIGNED_INTEGER) ? std::to_string(static_cast<uint64_t>(i))
                                                                            : std::to_string(i);
  } else if (RealOf(f, &d)) {
    out += fmt::format("{}", d);
  } else if (t == BT_FIELD_CLASS_TYPE_STRING) {
    out += StrOf(f);
  } else if (t == BT_FIELD_CLASS_TYPE_BIT_ARRAY) {
    out += fmt::format("{:#x}", bt_field_bit_array_get_value_as_integer(f));
  } else if (depth >= kMaxDepth) {
    out += "...";
  } else if (bt_field_class_type_is(t, BT_FIELD_CLASS_TYPE_ARRAY)) {
    out += '[';
    uint64_t n = bt_field_array_get_length(f);
    for (uint64_t k = 0; k < n && out.size() < kMaxText; ++k) {
      if (k) out += ", ";
      Render(bt_field_array_borrow_element_field_by_index_const(f, k), out, depth + 1);
    }
    out += ']';
  } else if (t == BT_FIELD_CLASS_TYPE_STRUCTURE) {
    const bt_field_class* fc = bt_field_borrow_class_const(f);
    uint64_t n = bt_field_class_structure_get_member_count(fc);
    out += '{';
    for (uint64_t k = 0; k < n && out.size() < kMaxText; ++k) {
      if (k) out += ", ";
      out += bt_field_class_structure_member_get_name(bt_field_class_structure_borrow_member_by_index_const(fc, k));
      out += " = ";
      Render(bt_field_structure_borrow_member_field_by_index_const(f, k), out, depth + 1);
    }
    out += '}';
  } else if (bt_field_class_type_is(t, BT_FIELD_CLASS_TYPE_VARIANT)) {
    Render(bt_field_variant_borrow_selected_option_field_const(f), out, depth + 1);
  } else if (bt_field_class_type_is(t, BT_FIELD_CLASS_TYPE_OPTION)) {
    Render(bt_field_option_borrow_field_const(f), out, depth + 1);
  }
  if (out.size() > kMaxText) out.resize(kMaxText);
}

const char* SoftirqName(int64_t vec) {
  static const char* const kNames[] = {"HI", "TIMER", "NET_TX", "NET_RX", "BLOCK", "IRQ_POLL", "TASKLET", "SCHED", "HRTIMER", "RCU"};
  return vec >= 0 && vec < 10 ? kNames[vec] : nullptr;
}

// How an event class maps, with the payload members it reads.
struct ClassInfo {
  Ev type = Ev::kKernelOther;
  model::StringId name = 0;   // s1 for the kinds whose s1 is fixed per class
  int m[5] = {-1, -1, -1, -1, -1};
  // kUserEntry / kUserPoint: payload members kept as args (key 0: skipped).
  std::vector<model::StringId> arg_keys;
};

struct StreamClassInfo {
  bool clock = false;
  bool discarded_events_clock = false;
  bool discarded_packets_clock = false;
  int tid = -1, pid = -1;  // common-context members
  int cpu_id = -1;         // packet-context member
};

class Reader {
 public:
  Reader(model::StringPool& strings, LttngEvents& out) : strings_(strings), out_(out) {}
  const std::string& malformed() const { return malformed_; }

  void Handle(const bt_message* msg) {
    switch (bt_message_get_type(msg)) {
      case BT_MESSAGE_TYPE_EVENT: OnEvent(msg); break;
      case BT_MESSAGE_TYPE_STREAM_BEGINNING: StreamOf(bt_message_stream_beginning_borrow_stream_const(msg)); break;
      case BT_MESSAGE_TYPE_STREAM_END: streams_.erase(bt_message_stream_end_borrow_stream_const(msg)); break;
      case BT_MESSAGE_TYPE_PACKET_BEGINNING: OnPacket(bt_message_packet_beginning_borrow_packet_const(msg)); break;
      case BT_MESSAGE_TYPE_DISCARDED_EVENTS: OnDiscarded(msg, false); break;
      case BT_MESSAGE_TYPE_DISCARDED_PACKETS: OnDiscarded(msg, true); break;
      default: break;
    }
  }

 private:
  struct StreamState {
    uint32_t row = 0;  // LttngEvents::streams
    const StreamClassInfo* sc = nullptr;
    // The run of this stream's events at one time: where it began in
    // LttngEvents' events and arg columns, and how long it is.
    int64_t run_ts = INT64_MIN;
    uint64_t run = 0;
    size_t run_event = 0, run_arg = 0;
  };

  const StreamClassInfo& StreamClassOf(const bt_stream_class* sc) {
    auto it = stream_classes_.find(sc);
    if (it != stream_classes_.end()) return it->second;
    StreamClassInfo info;
    info.clock = bt_stream_class_borrow_default_clock_class_const(sc) != nullptr;
    info.discarded_events_clock =
        bt_stream_class_supports_discarded_events(sc) && bt_stream_class_discarded_events_have_default_clock_snapshots(sc);
    info.discarded_packets_clock = bt_stream_class_supports_discarded_packets(sc) &&
                                   bt_stream_class_discarded_packets_have_default_clock_snapshots(sc);
    const bt_field_class* ctx = bt_stream_class_borrow_event_common_context_field_class_const(sc);
    // LTTng names its contexts _tid, _vtid...; babeltrace2 drops the underscore.
    info.tid = MemberIndex(ctx, "tid");
    if (info.tid < 0) info.tid = MemberIndex(ctx, "vtid");
    info.pid = MemberIndex(ctx, "pid");
    if (info.pid < 0) info.pid = MemberIndex(ctx, "vpid");
    if (bt_stream_class_supports_packets(sc))
      info.cpu_id = MemberIndex(bt_stream_class_borrow_packet_context_field_class_const(sc), "cpu_id");
    return stream_classes_.emplace(sc, info).first->second;
  }

  StreamState& StreamOf(const bt_stream* s) {
    auto it = streams_.find(s);
    if (it != streams_.end()) return it->second;
    StreamState st;
    st.sc = &StreamClassOf(bt_stream_borrow_class_const(s));
    st.row = static_cast<uint32_t>(out_.streams.size());
    StreamDesc d;
    const bt_trace* tr = bt_stream_borrow_trace_const(s);
    auto [ti, fresh] = traces_.try_emplace(tr);
    if (fresh) {
      const bt_value* domain = bt_trace_borrow_environment_entry_value_by_name_const(tr, "domain");
      ti->second = domain && bt_value_is_string(domain) && std::string_view(bt_value_string_get(domain)) == "kernel";
      const char* name = bt_trace_get_name(tr);
      out_.traces.push_back(name ? name : "");
      const bt_value* host = bt_trace_borrow_environment_entry_value_by_name_const(tr, "hostname");
      if (out_.hostname.empty() && host && bt_value_is_string(host)) out_.hostname = bt_value_string_get(host);
    }
    d.kernel = ti->second;
    const char* tn = bt_trace_get_name(tr);
    d.trace = tn ? tn : "";
    const char* sn = bt_stream_get_name(s);
    d.name = sn ? sn : fmt::format("stream {}", bt_stream_get_id(s));
    out_.streams.push_back(std::move(d));
    return streams_.emplace(s, st).first->second;
  }

  void OnPacket(const bt_packet* p) {
    StreamState& st = StreamOf(bt_packet_borrow_stream_const(p));
    const bt_field* ctx = bt_packet_borrow_context_field_const(p);
    int64_t cpu = IntOr(Member(ctx, st.sc->cpu_id), -1);
    out_.streams[st.row].cpu = cpu >= 0 && cpu <= INT16_MAX ? static_cast<int16_t>(cpu) : int16_t{-1};
  }

  static int64_t Ns(const bt_clock_snapshot* cs) {
    int64_t ns = 0;
    if (!cs || bt_clock_snapshot_get_ns_from_origin(cs, &ns) != BT_CLOCK_SNAPSHOT_GET_NS_FROM_ORIGIN_STATUS_OK) return 0;
    return ns;
  }

  void OnDiscarded(const bt_message* msg, bool packets) {
    const bt_stream* s = packets ? bt_message_discarded_packets_borrow_stream_const(msg)
                                 : bt_message_discarded_events_borrow_stream_const(msg);
    StreamState& st = StreamOf(s);
    Loss l;
    l.packets = packets;
    l.stream = st.row;
    l.kernel = out_.streams[st.row].kernel;
    uint64_t n = 0;
    if (packets) {
      if (bt_message_discarded_packets_get_count(msg, &n) == BT_PROPERTY_AVAILABILITY_AVAILABLE) l.count = n;
      if (st.sc->discarded_packets_clock) {
        l.from = Ns(bt_message_discarded_packets_borrow_beginning_default_clock_snapshot_const(msg));
        l.to = Ns(bt_message_discarded_packets_borrow_end_default_clock_snapshot_const(msg));
      }
    } else {
      if (bt_message_discarded_events_get_count(msg, &n) == BT_PROPERTY_AVAILABILITY_AVAILABLE) l.count = n;
      if (st.sc->discarded_events_clock) {
        l.from = Ns(bt_message_discarded_events_borrow_beginning_default_clock_snapshot_const(msg));
        l.to = Ns(bt_message_discarded_events_borrow_end_default_clock_snapshot_const(msg));
      }
    }
    out_.losses.push_back(l);
  }

  model::StringId Intern(std::string_view s) { return strings_.Intern(s); }

  // Metadata whose event header and fields take no bits (a damaged or
  // hostile trace) makes babeltrace2 decode the same empty event forever, at
  // one time: no tracer writes a million events of one stream at one
  // nanosecond. Such a run ends the read where it began (its events dropped,
  // and what follows), and the importer says why.
  static constexpr uint64_t kMaxEventsAtOneTime = uint64_t{1} << 20;
  bool CountRun(StreamState& st, int64_t ts) {
    if (ts != st.run_ts || st.run == 0) {
      st.run_ts = ts;
      st.run = 0;
      st.run_event = out_.events.size();
      st.run_arg = out_.arg_key.size();
    }
    if (++st.run <= kMaxEventsAtOneTime) return true;
    malformed_ = fmt::format(
        "stream {} has more than {} events at one time ({} ns): its event classes take no bits (malformed metadata); "
        "the events from there on are left out",
        out_.streams[st.row].name, kMaxEventsAtOneTime, ts);
    out_.total -= out_.events.size() - st.run_event + 1;
    out_.events.resize(st.run_event);
    out_.arg_key.resize(st.run_arg);
    out_.arg_str.resize(st.run_arg);
    out_.arg_num.resize(st.run_arg);
    return false;
  }

  ClassInfo Classify(const bt_event_class* ec, bool kernel) {
    ClassInfo ci;
    const char* cname = bt_event_class_get_name(ec);
    std::string_view name = cname ? cname : "";
    const bt_field_class* pl = bt_event_class_borrow_payload_field_class_const(ec);
    auto m = [&](int k, std::string_view member) { ci.m[k] = MemberIndex(pl, member); };
    ci.name = Intern(name);
    if (kernel) {
      if (name == "sched_switch") {
        ci.type = Ev::kSwitch;
        m(0, "prev_tid"), m(1, "next_tid"), m(2, "prev_state"), m(3, "prev_comm"), m(4, "next_comm");
      } else if (name == "sched_waking" || name == "sched_wakeup" || name == "sched_wakeup_new") {
        ci.type = Ev::kWakeup;
        m(0, "tid");
      } else if (name == "sched_process_fork") {
        ci.type = Ev::kFork;
        m(0, "parent_pid"), m(1, "child_tid"), m(2, "child_pid"), m(3, "child_comm");
      } else if (name == "sched_process_exec") {
        ci.type = Ev::kExec;
        m(0, "tid"), m(3, "filename");
      } else if (name == "sched_process_exit") {
        ci.type = Ev::kExit;
        m(0, "tid");
      } else if (name == "lttng_statedump_process_state") {
        ci.type = Ev::kStatedump;
        m(0, "tid"), m(1, "pid"), m(2, "ppid"), m(3, "name");
      } else if (StartsWith(name, "syscall_entry_") || StartsWith(name, "compat_syscall_entry_")) {
        ci.type = Ev::kSysEntry;
        ci.name = Intern(name.substr(name.find("entry_") + 6));
        m(0, "id");  // syscall_entry_unknown
      } else if (StartsWith(name, "syscall_exit_") || StartsWith(name, "compat_syscall_exit_")) {
        ci.type = Ev::kSysExit;
        ci.name = Intern(name.substr(name.find("exit_") + 5));
        m(0, "id"), m(1, "ret");
      } else if (name == "irq_handler_entry") {
        ci.type = Ev::kIrqEntry;
        m(0, "irq"), m(3, "name");
      } else if (name == "irq_handler_exit") {
        ci.type = Ev::kIrqExit;
        m(0, "irq");
      } else if (name == "irq_softirq_entry" || name == "softirq_entry") {
        ci.type = Ev::kSoftirqEntry;
        m(0, "vec");
      } else if (name == "irq_softirq_exit" || name == "softirq_exit") {
        ci.type = Ev::kSoftirqExit;
        m(0, "vec");
      }
      return ci;
    }
    if (name == "lttng_ust_cyg_profile:func_entry" || name == "lttng_ust_cyg_profile_fast:func_entry") {
      ci.type = Ev::kFuncEntry;
      m(0, "addr");
    } else if (name == "lttng_ust_cyg_profile:func_exit" || name == "lttng_ust_cyg_profile_fast:func_exit") {
      ci.type = Ev::kFuncExit;
      m(0, "addr");
    } else if (name == "lttng_ust_statedump:bin_info" || name == "lttng_ust_dl:dlopen") {
      ci.type = Ev::kBinInfo;
      m(0, "baddr"), m(1, "memsz"), m(3, "path");
    } else if (name == "lttng_ust_tracef:event" || StartsWith(name, "lttng_ust_tracelog:")) {
      ci.type = Ev::kMessage;
      m(3, "msg");
    } else if (EndsWith(name, "_exit") && name.find(':') != std::string_view::npos) {
      ci.type = Ev::kUserExit;
      ci.name = Intern(name.substr(0, name.size() - 5));
    } else {
      bool entry = EndsWith(name, "_entry") && name.find(':') != std::string_view::npos;
      ci.type = entry ? Ev::kUserEntry : Ev::kUserPoint;
      if (entry) ci.name = Intern(name.substr(0, name.size() - 6));
      uint64_t n = pl && bt_field_class_get_type(pl) == BT_FIELD_CLASS_TYPE_STRUCTURE
                       ? bt_field_class_structure_get_member_count(pl)
                       : 0;
      for (uint64_t k = 0; k < n; ++k) {
        std::string_view mn =
            bt_field_class_structure_member_get_name(bt_field_class_structure_borrow_member_by_index_const(pl, k));
        // A sequence's length member (LTTng's __x_length): the sequence says it.
        bool length = StartsWith(mn, "_") && EndsWith(mn, "_length");
        ci.arg_keys.push_back(length ? 0 : Intern(mn));
      }
    }
    return ci;
  }

  void AddArgs(const ClassInfo& ci, const bt_field* pl, Event& e) {
    e.args = static_cast<uint32_t>(out_.arg_key.size());
    for (size_t k = 0; k < ci.arg_keys.size(); ++k) {
      if (ci.arg_keys[k] == 0) continue;
      const bt_field* f = Member(pl, static_cast<int>(k));
      if (!f) continue;
      int64_t i;
      double d;
      model::StringId str = 0;
      double num = std::numeric_limits<double>::quiet_NaN();
      if (IntOf(f, &i)) {
        num = bt_field_class_type_is(bt_field_get_class_type(f), BT_FIELD_CLASS_TYPE_UNSIGNED_INTEGER)
                  ? static_cast<double>(static_cast<uint64_t>(i))
                  : static_cast<double>(i);
      } else if (RealOf(f, &d)) {
        num = d;
      } else {
        text_.clear();
        Render(f, text_, 0);
        str = Intern(text_);
      }
      out_.arg_key.push_back(ci.arg_keys[k]);
      out_.arg_str.push_back(str);
      out_.arg_num.push_back(num);
    }
    e.nargs = static_cast<uint32_t>(out_.arg_key.size()) - e.args;
  }

  void OnEvent(const bt_message* msg) {
    if (!malformed_.empty()) return;
    ++out_.total;
    const bt_event* ev = bt_message_event_borrow_event_const(msg);
    StreamState& st = StreamOf(bt_event_borrow_stream_const(ev));
    const StreamDesc& sd = out_.streams[st.row];
    Event e;
    e.cpu = sd.cpu;
    if (st.sc->clock) e.ts = Ns(bt_message_event_borrow_default_clock_snapshot_const(msg));
    if (!CountRun(st, e.ts)) return;
    const bt_field* ctx = bt_event_borrow_common_context_field_const(ev);
    int64_t v;
    if (IntOf(Member(ctx, st.sc->tid), &v)) e.tid = static_cast<int32_t>(v);
    if (IntOf(Member(ctx, st.sc->pid), &v)) e.pid = static_cast<int32_t>(v);

    const bt_event_class* ec = bt_event_borrow_class_const(ev);
    auto it = classes_.find(ec);
    if (it == classes_.end()) it = classes_.emplace(ec, Classify(ec, sd.kernel)).first;
    const ClassInfo& ci = it->second;
    const bt_field* pl = bt_event_borrow_payload_field_const(ev);
    auto f = [&](int k) { return Member(pl, ci.m[k]); };
    e.type = ci.type;
    e.s1 = ci.name;
    switch (ci.type) {
      case Ev::kSwitch:
        e.a = IntOr(f(0), -1);
        e.b = IntOr(f(1), -1);
        e.c = IntOr(f(2), 0);
        e.s1 = Intern(StrOf(f(3)));
        e.s2 = Intern(StrOf(f(4)));
        break;
      case Ev::kWakeup:
        e.a = IntOr(f(0), -1);
        break;
      case Ev::kFork:
        e.a = IntOr(f(0), -1);
        e.b = IntOr(f(1), -1);
        e.c = IntOr(f(2), -1);
        e.s1 = Intern(StrOf(f(3)));
        break;
      case Ev::kExec:
      case Ev::kExit:
        e.a = IntOr(f(0), -1);
        e.s1 = Intern(StrOf(f(3)));
        break;
      case Ev::kStatedump:
        e.a = IntOr(f(0), -1);
        e.b = IntOr(f(1), -1);
        e.c = IntOr(f(2), -1);
        e.s1 = Intern(StrOf(f(3)));
        break;
      case Ev::kSysEntry:
      case Ev::kSysExit:
        e.a = IntOr(f(0), 0);
        e.b = IntOr(f(1), 0);
        if (e.a != 0 && strings_.Get(ci.name) == "unknown") e.s1 = Intern(fmt::format("sys_{}", e.a));
        break;
      case Ev::kIrqEntry:
        e.a = IntOr(f(0), -1);
        e.s1 = Intern(fmt::format("irq:{}", StrOf(f(3)).empty() ? std::to_string(e.a) : std::string(StrOf(f(3)))));
        break;
      case Ev::kSoftirqEntry: {
        e.a = IntOr(f(0), -1);
        const char* n = SoftirqName(e.a);
        e.s1 = Intern(n ? fmt::format("softirq:{}", n) : fmt::format("softirq:{}", e.a));
        break;
      }
      case Ev::kIrqExit:
      case Ev::kSoftirqExit:
      case Ev::kFuncEntry:
      case Ev::kFuncExit:
        e.a = IntOr(f(0), 0);
        break;
      case Ev::kBinInfo:
        e.a = IntOr(f(0), 0);
        e.b = IntOr(f(1), 0);
        e.s1 = Intern(StrOf(f(3)));
        break;
      case Ev::kMessage:
        e.s1 = Intern(StrOf(f(3)));
        break;
      case Ev::kUserEntry:
      case Ev::kUserPoint:
        AddArgs(ci, pl, e);
        break;
      case Ev::kUserExit:
      case Ev::kKernelOther:
        break;
    }
    out_.events.push_back(e);
  }

  model::StringPool& strings_;
  LttngEvents& out_;
  std::unordered_map<const bt_stream*, StreamState> streams_;
  std::unordered_map<const bt_stream_class*, StreamClassInfo> stream_classes_;
  std::unordered_map<const bt_event_class*, ClassInfo> classes_;
  std::unordered_map<const bt_trace*, bool> traces_;  // kernel domain?
  std::string text_;
  std::string malformed_;  // why the read stopped early (CountRun)
};

// The calling thread's babeltrace2 error, as one line (its causes, outermost first).
std::string TakeError() {
  const bt_error* err = bt_current_thread_take_error();
  if (!err) return "babeltrace2 failed without saying why";
  std::string s;
  uint64_t n = bt_error_get_cause_count(err);
  for (uint64_t i = 0; i < n && i < 4; ++i) {
    const char* m = bt_error_cause_get_message(bt_error_borrow_cause_by_index(err, i));
    if (!m || !*m) continue;
    if (!s.empty()) s += ": ";
    s += m;
  }
  bt_error_release(err);
  for (char& c : s)
    if (c == '\n') c = ' ';
  return s.empty() ? "babeltrace2 failed without saying why" : s;
}

bt_graph_simple_sink_component_initialize_func_status SinkInit(bt_message_iterator*, void*) {
  return BT_GRAPH_SIMPLE_SINK_COMPONENT_INITIALIZE_FUNC_STATUS_OK;
}

// Called by bt_graph_run; C code on both sides, so nothing may escape it.
bt_graph_simple_sink_component_consume_func_status SinkConsume(bt_message_iterator* it, void* data) noexcept {
  bt_message_array_const msgs;
  uint64_t count = 0;
  switch (bt_message_iterator_next(it, &msgs, &count)) {
    case BT_MESSAGE_ITERATOR_NEXT_STATUS_OK: break;
    case BT_MESSAGE_ITERATOR_NEXT_STATUS_END: return BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_END;
    case BT_MESSAGE_ITERATOR_NEXT_STATUS_AGAIN: return BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_AGAIN;
    case BT_MESSAGE_ITERATOR_NEXT_STATUS_MEMORY_ERROR:
      return BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_MEMORY_ERROR;
    default: return BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_ERROR;
  }
  auto* r = static_cast<Reader*>(data);
  bool oom = false;
  for (uint64_t i = 0; i < count; ++i) {
#if defined(__cpp_exceptions)
    try {
      if (!oom) r->Handle(msgs[i]);
    } catch (...) {
      oom = true;  // bad_alloc from a vector: the only thing Handle throws
    }
#else
    r->Handle(msgs[i]);
#endif
    bt_message_put_ref(msgs[i]);
  }
  if (oom) return BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_MEMORY_ERROR;
  return r->malformed().empty() ? BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_OK
                                : BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_ERROR;
}

// Owns the graph and the plugins for one read.
struct Graph {
  bt_graph* graph = nullptr;
  const bt_plugin* ctf = nullptr;
  const bt_plugin* utils = nullptr;
  ~Graph() {
    bt_graph_put_ref(graph);
    bt_plugin_put_ref(ctf);
    bt_plugin_put_ref(utils);
  }
};

// Where scripts/bundle.sh puts babeltrace2's plugins beside a relocated strata:
// <bin>/../lib/deps/babeltrace2/plugins ("" when the executable cannot be read).
std::string BundledPluginDir() {
  std::string path = SelfExePath();
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return "";
  return path.substr(0, slash) + "/../lib/deps/babeltrace2/plugins";
}

// A plugin found in the bundle's plugin directory, or BT_PLUGIN_FIND_STATUS_NOT_FOUND.
bt_plugin_find_status FindBundledPlugin(const char* name, const bt_plugin** p) {
  std::string dir = BundledPluginDir();
  struct stat st;
  if (dir.empty() || ::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return BT_PLUGIN_FIND_STATUS_NOT_FOUND;
  const bt_plugin_set* set = nullptr;
  if (bt_plugin_find_all_from_dir(dir.c_str(), BT_FALSE, BT_FALSE, &set) != BT_PLUGIN_FIND_ALL_FROM_DIR_STATUS_OK)
    return BT_PLUGIN_FIND_STATUS_NOT_FOUND;
  bt_plugin_find_status found = BT_PLUGIN_FIND_STATUS_NOT_FOUND;
  for (uint64_t i = 0; i < bt_plugin_set_get_plugin_count(set); ++i) {
    const bt_plugin* candidate = bt_plugin_set_borrow_plugin_by_index_const(set, i);
    if (std::strcmp(bt_plugin_get_name(candidate), name) == 0) {
      bt_plugin_get_ref(candidate);
      *p = candidate;
      found = BT_PLUGIN_FIND_STATUS_OK;
      break;
    }
  }
  bt_plugin_set_put_ref(set);
  return found;
}

Status FindPlugin(const char* name, const bt_plugin** p) {
  bt_plugin_find_status s = bt_plugin_find(name, BT_TRUE, BT_FALSE, BT_TRUE, BT_TRUE, BT_FALSE, p);
  // (A bundle made by scripts/bundle.sh, on a machine without babeltrace2.)
  if (s == BT_PLUGIN_FIND_STATUS_NOT_FOUND) s = FindBundledPlugin(name, p);
  if (s == BT_PLUGIN_FIND_STATUS_OK) return OkStatus();
  if (s == BT_PLUGIN_FIND_STATUS_NOT_FOUND)
    return Err(StatusCode::kUnavailable, "babeltrace2's \"{}\" plugin is not installed (Debian: libbabeltrace2-0)", name);
  return Err(StatusCode::kInternal, "loading babeltrace2's \"{}\" plugin: {}", name, TakeError());
}

// The muxer grows a new input port each time one is connected: the free one.
const bt_port_input* FreeMuxerPort(const bt_component_filter* mux) {
  uint64_t n = bt_component_filter_get_input_port_count(mux);
  for (uint64_t i = 0; i < n; ++i) {
    const bt_port_input* p = bt_component_filter_borrow_input_port_by_index_const(mux, i);
    if (!bt_port_is_connected(bt_port_input_as_port_const(p))) return p;
  }
  return nullptr;
}

}  // namespace

Status ReadLttngInProcess(const std::vector<std::string>& dirs, model::StringPool& strings, LttngEvents& out,
                          std::string* stopped) {
  Graph g;
  STRATA_RETURN_IF_ERROR(FindPlugin("ctf", &g.ctf));
  STRATA_RETURN_IF_ERROR(FindPlugin("utils", &g.utils));
  const bt_component_class_source* fs = bt_plugin_borrow_source_component_class_by_name_const(g.ctf, "fs");
  const bt_component_class_filter* muxer = bt_plugin_borrow_filter_component_class_by_name_const(g.utils, "muxer");
  if (!fs || !muxer) return Err(StatusCode::kUnavailable, "babeltrace2 has no source.ctf.fs or filter.utils.muxer");
  g.graph = bt_graph_create(0);
  if (!g.graph) return Err(StatusCode::kInternal, "bt_graph_create: {}", TakeError());

  const bt_component_filter* mux = nullptr;
  if (bt_graph_add_filter_component(g.graph, muxer, "muxer", nullptr, BT_LOGGING_LEVEL_NONE, &mux) !=
      BT_GRAPH_ADD_COMPONENT_STATUS_OK)
    return Err(StatusCode::kInternal, "adding babeltrace2's muxer: {}", TakeError());
  for (size_t i = 0; i < dirs.size(); ++i) {
    bt_value* params = bt_value_map_create();
    bt_value* inputs = nullptr;
    if (!params || bt_value_map_insert_empty_array_entry(params, "inputs", &inputs) != BT_VALUE_MAP_INSERT_ENTRY_STATUS_OK ||
        bt_value_array_append_string_element(inputs, dirs[i].c_str()) != BT_VALUE_ARRAY_APPEND_ELEMENT_STATUS_OK) {
      bt_value_put_ref(params);
      return Err(StatusCode::kInternal, "out of memory building babeltrace2's parameters");
    }
    const bt_component_source* src = nullptr;
    std::string name = fmt::format("src{}", i);
    bt_graph_add_component_status s =
        bt_graph_add_source_component(g.graph, fs, name.c_str(), params, BT_LOGGING_LEVEL_NONE, &src);
    bt_value_put_ref(params);
    if (s != BT_GRAPH_ADD_COMPONENT_STATUS_OK)
      return Err(StatusCode::kCorrupt, "{}: babeltrace2 cannot open this CTF trace: {}", dirs[i], TakeError());
    uint64_t ports = bt_component_source_get_output_port_count(src);
    for (uint64_t p = 0; p < ports; ++p) {
      const bt_port_input* in = FreeMuxerPort(mux);
      if (!in || bt_graph_connect_ports(g.graph, bt_component_source_borrow_output_port_by_index_const(src, p), in,
                                        nullptr) != BT_GRAPH_CONNECT_PORTS_STATUS_OK)
        return Err(StatusCode::kInternal, "{}: connecting babeltrace2's ports: {}", dirs[i], TakeError());
    }
  }
  Reader reader(strings, out);
  const bt_component_sink* sink = nullptr;
  if (bt_graph_add_simple_sink_component(g.graph, "strata", SinkInit, SinkConsume, nullptr, &reader, &sink) !=
          BT_GRAPH_ADD_COMPONENT_STATUS_OK ||
      bt_graph_connect_ports(g.graph, bt_component_filter_borrow_output_port_by_name_const(mux, "out"),
                             bt_component_sink_borrow_input_port_by_name_const(sink, "in"),
                             nullptr) != BT_GRAPH_CONNECT_PORTS_STATUS_OK)
    return Err(StatusCode::kInternal, "adding the sink to babeltrace2's graph: {}", TakeError());

  for (;;) {
    bt_graph_run_status s = bt_graph_run(g.graph);
    if (s == BT_GRAPH_RUN_STATUS_OK) break;
    if (s == BT_GRAPH_RUN_STATUS_AGAIN) continue;
    std::string why = !reader.malformed().empty()            ? reader.malformed()
                      : s == BT_GRAPH_RUN_STATUS_MEMORY_ERROR ? "out of memory"
                                                              : TakeError();
    if (!reader.malformed().empty()) TakeError();  // (babeltrace2's own error: the sink said stop)
    if (out.total == 0) return Err(StatusCode::kCorrupt, "babeltrace2 could not read the trace: {}", why);
    *stopped = why;
    break;
  }
  return OkStatus();
}

#endif  // STRATA_HAVE_BABELTRACE2

}  // namespace strata::importers::lttng

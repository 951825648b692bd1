#include "collectors/os/os_encoder.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstring>

#include "collectors/os/syscall_table.h"
#include "format/schema_os.h"

namespace strata::collectors::os {
namespace {

#ifndef PERF_RECORD_MISC_SWITCH_OUT_PREEMPT
#define PERF_RECORD_MISC_SWITCH_OUT_PREEMPT (1 << 14)
#endif

constexpr uint32_t kKernelSpace = UINT32_MAX;
// Addresses at or above this are the kernel's on x86-64.
constexpr uint64_t kKernelStart = 0xffff800000000000ull;

class Payload {
 public:
  explicit Payload(std::vector<uint8_t>& b) : b_(b) { b_.clear(); }
  template <typename T>
  Payload& Put(T v) {
    size_t o = b_.size();
    b_.resize(o + sizeof v);
    std::memcpy(b_.data() + o, &v, sizeof v);
    return *this;
  }
  Payload& Str(std::string_view s) {
    // Strings are NUL-terminated on disk: an embedded NUL would cut them short.
    size_t n = s.find('\0');
    if (n != std::string_view::npos) s = s.substr(0, n);
    b_.insert(b_.end(), s.begin(), s.end());
    b_.push_back(0);
    return *this;
  }

 private:
  std::vector<uint8_t>& b_;
};

}  // namespace

OsEncoder::OsEncoder(EncoderOptions opt, std::vector<format::StreamWriter*> streams)
    : opt_(opt), streams_(std::move(streams)), lost_(streams_.size(), 0), py_pending_(streams_.size()) {
  if (opt_.dwarf) unwinder_ = std::make_unique<DwarfUnwinder>(&symbolizer_);
}

OsEncoder::~OsEncoder() = default;

void OsEncoder::Emit(uint32_t ring, uint32_t event, uint64_t ts) {
  if (ring >= streams_.size() || !streams_[ring]) return;
  streams_[ring]->Append(event, ts, buf_.data(), buf_.size());
  ++stats_.events;
}

void OsEncoder::Process(uint32_t ring, const uint8_t* data, size_t size) {
  size_t off = 0;
  std::vector<uint8_t> py;
  while (size - off >= sizeof(perf_event_header)) {
    perf_event_header h;
    std::memcpy(&h, data + off, sizeof h);
    if (h.size < sizeof h || h.size > size - off) {
      ++stats_.malformed;  // a torn span: nothing after it can be framed
      return;
    }
    const uint8_t* rec = data + off;
    off += h.size;
    EventKind kind = KindOf(rec, h);
    if (kind == EventKind::kPythonStack && ring < py_pending_.size()) {
      ++stats_.records;
      py_pending_[ring].assign(rec, rec + h.size);
      continue;
    }
    py.clear();
    if (kind == EventKind::kCpuClock && ring < py_pending_.size()) py.swap(py_pending_[ring]);
    Dispatch(ring, rec, h, py.empty() ? nullptr : py.data());
  }
}

EventKind OsEncoder::KindOf(const uint8_t* rec, const perf_event_header& h) const {
  uint64_t id;
  if (h.type != PERF_RECORD_SAMPLE || !SampleIdentifier(rec, h.size, &id)) return EventKind::kLeader;
  auto it = events_.find(id);
  return it == events_.end() ? EventKind::kLeader : it->second.kind;
}

size_t OsEncoder::Hold(std::vector<uint8_t>& bytes, const uint8_t* rec, size_t size) {
  size_t at = bytes.size();
  bytes.insert(bytes.end(), rec, rec + size);
  bytes.resize((bytes.size() + 7) & ~size_t{7});
  return at;
}

uint64_t OsEncoder::RecordTime(const uint8_t* rec, const perf_event_header& h) const {
  if (h.type != PERF_RECORD_SAMPLE) {
    SampleId sid;
    return ParseSampleId(rec, h.size, &sid) ? sid.time : 0;
  }
  uint64_t id;
  if (!SampleIdentifier(rec, h.size, &id)) return 0;
  auto it = events_.find(id);
  if (it == events_.end()) return 0;
  uint64_t st = it->second.sample_type;
  if (!(st & PERF_SAMPLE_TIME)) return 0;
  // IDENTIFIER, IP, TID precede TIME in a sample.
  size_t off = sizeof(perf_event_header) + 8 + ((st & PERF_SAMPLE_IP) ? 8 : 0) + ((st & PERF_SAMPLE_TID) ? 8 : 0);
  uint64_t t = 0;
  if (off + 8 <= h.size) std::memcpy(&t, rec + off, 8);
  return t;
}

void OsEncoder::ProcessBatch(const std::vector<Span>& spans, uint64_t cutoff) {
  // Records in time order across rings: a process's exec and mmaps may sit in
  // one CPU's ring and its next samples in another's, and the address spaces
  // must see them in the order they happened. Held records come first and are
  // sorted; a stable sort keeps each ring's own order among equal times.
  size_t old = batch_.size();
  for (const Span& sp : spans) {
    size_t off = 0;
    while (sp.size - off >= sizeof(perf_event_header)) {
      perf_event_header h;
      std::memcpy(&h, sp.data + off, sizeof h);
      if (h.size < sizeof h || h.size > sp.size - off) {
        ++stats_.malformed;
        break;
      }
      const uint8_t* rec = sp.data + off;
      off += h.size;
      // A Python stack record and its sample are written back to back in one
      // ring (the BPF program runs first, in the sample's interrupt): pair
      // them here, in ring order, before sorting by time can part them. A
      // drain may end between the two: the record waits for the next span.
      EventKind kind = KindOf(rec, h);
      if (kind == EventKind::kPythonStack && sp.ring < py_pending_.size()) {
        ++stats_.records;
        py_pending_[sp.ring].assign(rec, rec + h.size);
        continue;
      }
      // Record sizes are multiples of 8 (the kernel pads them), so copies stay aligned.
      BatchRecord br{RecordTime(rec, h), sp.ring, Hold(held_, rec, h.size)};
      if (kind == EventKind::kCpuClock && sp.ring < py_pending_.size() && !py_pending_[sp.ring].empty()) {
        br.py = Hold(held_, py_pending_[sp.ring].data(), py_pending_[sp.ring].size());
        py_pending_[sp.ring].clear();
      }
      batch_.push_back(br);
    }
  }
  auto by_time = [](const BatchRecord& a, const BatchRecord& b) { return a.time < b.time; };
  if (!std::is_sorted(batch_.begin() + static_cast<std::ptrdiff_t>(old), batch_.end(), by_time) ||
      (old > 0 && old < batch_.size() && batch_[old].time < batch_[old - 1].time))
    std::stable_sort(batch_.begin(), batch_.end(), by_time);
  size_t n = 0;
  while (n < batch_.size() && batch_[n].time <= cutoff) ++n;
  for (size_t i = 0; i < n; ++i) {
    const uint8_t* rec = held_.data() + batch_[i].offset;
    perf_event_header h;
    std::memcpy(&h, rec, sizeof h);
    Dispatch(batch_[i].ring, rec, h, batch_[i].py == kNoPython ? nullptr : held_.data() + batch_[i].py);
  }
  if (n == batch_.size()) {
    batch_.clear();
    held_.clear();
    return;
  }
  // Keep the younger records for the next call.
  keep_.clear();
  keep_bytes_.clear();
  for (size_t i = n; i < batch_.size(); ++i) {
    const uint8_t* rec = held_.data() + batch_[i].offset;
    perf_event_header h;
    std::memcpy(&h, rec, sizeof h);
    BatchRecord k{batch_[i].time, batch_[i].ring, Hold(keep_bytes_, rec, h.size)};
    if (batch_[i].py != kNoPython) {
      const uint8_t* py = held_.data() + batch_[i].py;
      perf_event_header ph;
      std::memcpy(&ph, py, sizeof ph);
      k.py = Hold(keep_bytes_, py, ph.size);
    }
    keep_.push_back(k);
  }
  batch_.swap(keep_);
  held_.swap(keep_bytes_);
}

void OsEncoder::Dispatch(uint32_t ring, const uint8_t* rec, const perf_event_header& h, const uint8_t* py) {
  {
    ++stats_.records;
    switch (h.type) {
      case PERF_RECORD_SAMPLE: OnSample(ring, rec, h.size, py); break;
      case PERF_RECORD_SWITCH: OnSwitch(ring, rec, h.size, h.misc); break;
      case PERF_RECORD_FORK: OnTask(ring, rec, h.size, true); break;
      case PERF_RECORD_EXIT: OnTask(ring, rec, h.size, false); break;
      case PERF_RECORD_COMM: OnComm(ring, rec, h.size, h.misc); break;
      case PERF_RECORD_MMAP2: OnMmap2(ring, rec, h.size); break;
      case PERF_RECORD_LOST: {
        LostRecord l;
        SampleId sid;
        if (!ParseLost(rec, h.size, &l)) {
          ++stats_.malformed;
          break;
        }
        OnLost(ring, l.lost, ParseSampleId(rec, h.size, &sid) ? sid.time : 0);
        break;
      }
      case PERF_RECORD_LOST_SAMPLES: {
        uint64_t n;
        SampleId sid;
        if (!ParseLostSamples(rec, h.size, &n)) {
          ++stats_.malformed;
          break;
        }
        stats_.lost_samples += n;
        OnLost(ring, n, ParseSampleId(rec, h.size, &sid) ? sid.time : 0);
        break;
      }
      case PERF_RECORD_THROTTLE: ++stats_.throttled; break;
      default: ++stats_.unknown; break;
    }
  }
}

void OsEncoder::OnLost(uint32_t ring, uint64_t lost, uint64_t ts) {
  if (ring >= lost_.size()) return;
  lost_[ring] += lost;
  stats_.lost += lost;
  if (streams_[ring]) {
    streams_[ring]->set_discarded(lost_[ring]);
    if (!ts) ts = streams_[ring]->last_timestamp();
  }
  Payload(buf_).Put<uint64_t>(lost);
  Emit(ring, format::kLost, ts);
}

void OsEncoder::OnSwitch(uint32_t ring, const uint8_t* rec, size_t size, uint16_t misc) {
  SampleId sid;
  if (!ParseSampleId(rec, size, &sid)) {
    ++stats_.malformed;
    return;
  }
  if (misc & PERF_RECORD_MISC_SWITCH_OUT) {
    Payload(buf_).Put(sid.pid).Put(sid.tid).Put<uint8_t>((misc & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT) ? 1 : 0);
    Emit(ring, format::kSwitchOut, sid.time);
  } else {
    Payload(buf_).Put(sid.pid).Put(sid.tid);
    Emit(ring, format::kSwitchIn, sid.time);
  }
}

uint32_t OsEncoder::NewSpace(uint32_t pid, const Space* copy_from) {
  Space sp;
  if (copy_from) sp = *copy_from;
  sp.pid = pid;
  sp.py_runtime = 0;
  sp.py_at_sample = false;  // (a forked child is handed to the BPF program on its own)
  sp.py_checked_generation = UINT64_MAX;
  auto id = static_cast<uint32_t>(spaces_.size());
  spaces_.push_back(std::move(sp));
  space_of_pid_[pid] = id;
  return id;
}

uint32_t OsEncoder::SpaceOf(uint32_t pid) {
  auto it = space_of_pid_.find(pid);
  return it != space_of_pid_.end() ? it->second : NewSpace(pid, nullptr);
}

void OsEncoder::OnTask(uint32_t ring, const uint8_t* rec, size_t size, bool fork) {
  TaskRecord t;
  if (!ParseTask(rec, size, &t)) {
    ++stats_.malformed;
    return;
  }
  if (fork && t.pid == t.tid && t.pid != t.ppid) {
    // A new process starts with a copy of its parent's mappings; the kernel
    // reports no MMAP2 records for what it inherits.
    auto parent = space_of_pid_.find(t.ppid);
    uint32_t id = NewSpace(t.pid, parent != space_of_pid_.end() ? &spaces_[parent->second] : nullptr);
    // A forked interpreter (a DataLoader worker) has its parent's runtime at
    // the same address: the BPF program can read it as soon as it knows the pid.
    if (parent != space_of_pid_.end() && spaces_[parent->second].py_runtime && bpf_) {
      Space& child = spaces_[id];
      child.py_runtime = spaces_[parent->second].py_runtime;
      child.py_module = spaces_[parent->second].py_module;
      child.py_checked_generation = child.as.generation();
      python_.Inherit(static_cast<pid_t>(t.pid), static_cast<pid_t>(t.ppid));
      ++stats_.python_processes;
      AddToBpf(child);
    }
  }
  if (!fork && t.pid == t.tid) {
    auto it = space_of_pid_.find(t.pid);
    if (it != space_of_pid_.end()) {
      if (unwinder_) unwinder_->Forget(it->second);
      python_.Forget(static_cast<pid_t>(t.pid));
      if (bpf_ && spaces_[it->second].py_runtime) bpf_->RemoveProcess(t.pid);
    }
  }
  Payload(buf_).Put(t.pid).Put(t.ppid).Put(t.tid).Put(t.ptid);
  Emit(ring, fork ? format::kTaskNew : format::kTaskExit, t.time);
}

void OsEncoder::OnComm(uint32_t ring, const uint8_t* rec, size_t size, uint16_t misc) {
  CommRecord c;
  SampleId sid;
  if (!ParseComm(rec, size, &c) || !ParseSampleId(rec, size, &sid)) {
    ++stats_.malformed;
    return;
  }
  bool exec = (misc & PERF_RECORD_MISC_COMM_EXEC) != 0;
  if (exec) {
    auto it = space_of_pid_.find(c.pid);
    if (it != space_of_pid_.end() && unwinder_) unwinder_->Forget(it->second);
    python_.Forget(static_cast<pid_t>(c.pid));
    if (bpf_) bpf_->RemoveProcess(c.pid);
    NewSpace(c.pid, nullptr);  // exec: a new image, mapped afresh
  }
  Payload(buf_).Put(c.pid).Put(c.tid).Put<uint8_t>(exec ? 1 : 0).Str(std::string_view(c.comm, c.comm_len));
  Emit(ring, format::kComm, sid.time);
}

void OsEncoder::OnMmap2(uint32_t ring, const uint8_t* rec, size_t size) {
  Mmap2Record m;
  SampleId sid;
  if (!ParseMmap2(rec, size, &m) || !ParseSampleId(rec, size, &sid)) {
    ++stats_.malformed;
    return;
  }
  if (!(m.prot & PROT_EXEC)) return;  // data mappings carry no code
  Mapping map;
  map.start = m.addr;
  map.end = m.addr + m.len;
  map.pgoff = m.pgoff;
  map.path.assign(m.filename, m.filename_len);
  if (m.has_build_id) map.build_id = HexBuildId(m.build_id, m.build_id_size);
  Payload(buf_)
      .Put(m.pid)
      .Put(m.tid)
      .Put(m.addr)
      .Put(m.len)
      .Put(m.pgoff)
      .Str(map.build_id)
      .Str(map.path);
  Emit(ring, format::kMmap, sid.time);
  spaces_[SpaceOf(m.pid)].as.Add(std::move(map));
}

uint32_t OsEncoder::Callsite(uint32_t ring, uint64_t ts, uint32_t parent, uint32_t frame) {
  uint64_t key = (uint64_t{parent} << 32) | frame;
  auto it = callsites_.find(key);
  if (it != callsites_.end()) return it->second;
  uint32_t id = next_callsite_++;
  callsites_.emplace(key, id);
  ++stats_.callsites;
  Payload(buf_).Put(id).Put(parent).Put(frame);
  Emit(ring, format::kCallsite, ts);
  return id;
}

uint32_t OsEncoder::NativeFrame(uint32_t ring, uint32_t space, uint64_t pc) {
  if (pc >= kKernelStart) {
    auto it = kernel_frames_.find(pc);
    if (it != kernel_frames_.end()) return it->second;
    uint32_t id = next_frame_++;
    kernel_frames_.emplace(pc, id);
    pending_.push_back({id, ring, kKernelSpace, pc});
    return id;
  }
  uint64_t key = (uint64_t{space} << 48) ^ pc;
  auto it = native_frames_.find(key);
  if (it != native_frames_.end()) return it->second;
  uint32_t id = next_frame_++;
  native_frames_.emplace(key, id);
  pending_.push_back({id, ring, space, pc});
  return id;
}

uint32_t OsEncoder::PythonFrameId(uint32_t ring, const PythonFrame& f) {
  std::string key = f.function + '\0' + f.file + '\0' + std::to_string(f.line) + '\0' + std::to_string(f.first_line);
  auto it = python_frames_.find(key);
  if (it != python_frames_.end()) return it->second;
  uint32_t id = next_frame_++;
  python_frames_.emplace(std::move(key), id);
  ++stats_.frames;
  // Python frames have no pc: that field holds the function's first line.
  Payload(buf_)
      .Put(id)
      .Put<uint8_t>(format::kFramePython)
      .Put<uint64_t>(f.first_line)
      .Str(f.function)
      .Str(f.file)
      .Put(f.line);
  uint64_t ts = ring < streams_.size() && streams_[ring] ? streams_[ring]->last_timestamp() : 0;
  Emit(ring, format::kFrame, ts);
  return id;
}

void OsEncoder::AddToBpf(Space& sp) {
  const StrataPyLayout* l = python_.LayoutOf(static_cast<pid_t>(sp.pid));
  if (!bpf_ || !l) return;
  Status st = bpf_->AddProcess(sp.pid, sp.py_runtime, *l);
  sp.py_at_sample = st.ok();
  if (!st.ok()) {
    if (stats_.python_bpf_refused == 0) stats_.python_bpf_why = st.message();
    ++stats_.python_bpf_refused;
  }
}

void OsEncoder::CheckPython(Space& sp) {
  if (!opt_.python || sp.py_checked_generation == sp.as.generation()) return;
  sp.py_checked_generation = sp.as.generation();
  if (sp.py_runtime) return;
  std::string why;
  sp.py_runtime = python_.FindRuntime(static_cast<pid_t>(sp.pid), sp.as, &symbolizer_, &why);
  if (sp.py_runtime) {
    ++stats_.python_processes;
    AddToBpf(sp);
    for (const Mapping& m : sp.as.mappings()) {
      std::string base = ModuleName(m.path);
      if (base.rfind("python", 0) == 0 || base.rfind("libpython", 0) == 0) {
        const ElfSymbols* s = symbolizer_.SymbolsFor(m);
        if (s && s->SymbolAddress("_PyRuntime")) {
          sp.py_module = m.path;
          break;
        }
      }
    }
  } else if (!why.empty() && std::find(stats_.python_notes.begin(), stats_.python_notes.end(), why) ==
                                 stats_.python_notes.end() && stats_.python_notes.size() < 8) {
    stats_.python_notes.push_back(why);
  }
}

bool OsEncoder::PythonFromBpf(const SampleRecord& s, const uint8_t* py) {
  perf_event_header h;
  std::memcpy(&h, py, sizeof h);
  uint64_t id;
  if (!SampleIdentifier(py, h.size, &id)) return false;
  auto it = events_.find(id);
  if (it == events_.end()) return false;
  SampleRecord r;
  if (!ParseSample(py, h.size, it->second.sample_type, 0, &r) || r.raw_size < sizeof(PythonBpfHeader)) {
    ++stats_.malformed;
    return false;
  }
  PythonBpfHeader hdr;
  std::memcpy(&hdr, r.raw, sizeof hdr);
  if (hdr.magic != kPythonBpfMagic || hdr.frames > (r.raw_size - sizeof hdr) / sizeof(PythonRawFrame)) {
    ++stats_.malformed;
    return false;
  }
  // A record whose sample was lost, followed by a sample of another thread.
  if (hdr.tid != s.tid || hdr.pid != s.pid) return false;
  raw_frames_.resize(hdr.frames);
  if (hdr.frames) std::memcpy(raw_frames_.data(), r.raw + sizeof hdr, hdr.frames * sizeof(PythonRawFrame));
  python_.Resolve(static_cast<pid_t>(s.pid), raw_frames_.data(), raw_frames_.size(), &py_);
  return !py_.empty();
}

uint32_t OsEncoder::StackOf(uint32_t ring, uint32_t space_id, const SampleRecord& s, bool with_chain,
                            const uint8_t* py, bool late) {
  Space& sp = spaces_[space_id];
  pcs_.clear();
  // Innermost first: the sampled IP (a kernel address when the sample hit
  // kernel mode; kernel call chains are not requested), then the user chain.
  if (s.ip >= kKernelStart) pcs_.push_back(s.ip);
  bool unwound = false;
  if (with_chain && unwinder_ && s.regs_abi != 0 && s.stack_size > 0) {
    size_t before = pcs_.size();
    unwound = unwinder_->Unwind(space_id, sp.as, s, &pcs_, opt_.max_frames);
    if (!unwound) {
      pcs_.resize(before);
      ++stats_.dwarf_failures;
    }
  }
  if (!unwound && with_chain && s.chain_len > 0) {
    bool first_user = true;
    for (uint64_t i = 0; i < s.chain_len && pcs_.size() < opt_.max_frames; ++i) {
      uint64_t pc = s.ChainAt(i);
      if (pc >= static_cast<uint64_t>(PERF_CONTEXT_MAX)) continue;  // context markers
      if (pc >= kKernelStart) continue;
      if (pc == 0) break;
      // Frame-pointer chains through code built without them follow garbage:
      // every caller must be inside an executable mapping.
      if (!first_user && !sp.as.Find(pc)) break;
      first_user = false;
      pcs_.push_back(pc);
    }
  }
  if (pcs_.empty() && s.ip) pcs_.push_back(s.ip);

  frame_ids_.clear();
  // Python threads: interpreter frames replace the (meaningless) C frames of
  // the evaluation loop. Kept: what runs inside the innermost interpreter call
  // (a C extension, a builtin), down to and including the first frame in the
  // interpreter's own module.
  bool python = false;
  if (with_chain && opt_.python) {
    CheckPython(sp);
    if (sp.py_runtime) {
      py_.clear();
      bool got = false;
      if (py) {
        got = PythonFromBpf(s, py);
      } else if (late) {
        got = python_.ReadStack(static_cast<pid_t>(s.pid), sp.py_runtime, s.tid, &py_);
        stats_.python_late += got;
      }
      if (got) {
        python = true;
        ++stats_.python_samples;
        size_t keep = pcs_.size();
        for (size_t i = 0; i < pcs_.size(); ++i) {
          const Mapping* m = pcs_[i] < kKernelStart ? sp.as.Find(pcs_[i]) : nullptr;
          if (m && m->path == sp.py_module) {
            keep = i + 1;
            break;
          }
        }
        pcs_.resize(keep);
      }
    }
  }
  for (size_t i = 0; i < pcs_.size(); ++i) {
    // Callers' return addresses point after the call: step back into it.
    uint64_t pc = pcs_[i];
    bool leaf = i == 0 || (i == 1 && pcs_[0] >= kKernelStart);
    frame_ids_.push_back(NativeFrame(ring, space_id, leaf ? pc : pc - 1));
  }
  if (python)
    for (const PythonFrame& f : py_) frame_ids_.push_back(PythonFrameId(ring, f));
  uint32_t parent = 0;
  for (size_t i = frame_ids_.size(); i-- > 0;) parent = Callsite(ring, s.time, parent, frame_ids_[i]);
  return parent;
}

void OsEncoder::OnSample(uint32_t ring, const uint8_t* rec, size_t size, const uint8_t* py) {
  uint64_t id;
  if (!SampleIdentifier(rec, size, &id)) {
    ++stats_.malformed;
    return;
  }
  auto it = events_.find(id);
  if (it == events_.end()) {
    ++stats_.unknown;
    return;
  }
  const EventInfo& info = it->second;
  SampleRecord s;
  if (!ParseSample(rec, size, info.sample_type, info.regs_mask, &s)) {
    ++stats_.malformed;
    return;
  }
  switch (info.kind) {
    case EventKind::kSchedSwitch: {
      auto state = static_cast<uint64_t>(ReadRawField(s.raw, s.raw_size, tp_.switch_prev_state));
      auto next = static_cast<uint32_t>(ReadRawField(s.raw, s.raw_size, tp_.switch_next_pid));
      // Where the thread blocked (user stack); not for preemptions, whose stack is
      // wherever the timer tick found it.
      uint32_t stack = (state & 0xff) != 0 && s.chain_len > 0 ? StackOf(ring, SpaceOf(s.pid), s, true) : 0;
      Payload(buf_).Put(s.pid).Put(s.tid).Put(state).Put(next).Put(stack);
      Emit(ring, format::kSchedSwitch, s.time);
      break;
    }
    case EventKind::kSchedWakeup: {
      auto wakee = static_cast<uint32_t>(ReadRawField(s.raw, s.raw_size, tp_.wakeup_pid));
      auto target = static_cast<uint32_t>(ReadRawField(s.raw, s.raw_size, tp_.wakeup_target_cpu));
      Payload(buf_).Put(s.pid).Put(s.tid).Put(wakee).Put(target);
      Emit(ring, format::kSchedWakeup, s.time);
      break;
    }
    case EventKind::kSysEnter:
    case EventKind::kSysExit: {
      bool enter = info.kind == EventKind::kSysEnter;
      auto nr = static_cast<uint32_t>(ReadRawField(s.raw, s.raw_size, enter ? tp_.enter_id : tp_.exit_id));
      if (nr < 4096) {
        if (syscall_named_.size() <= nr) syscall_named_.resize(nr + 1, 0);
        if (!syscall_named_[nr]) {
          syscall_named_[nr] = 1;
          Payload(buf_).Put(nr).Str(SyscallNameOr(nr));
          Emit(ring, format::kSyscallName, s.time);
        }
      }
      if (enter) {
        Payload(buf_).Put(s.pid).Put(s.tid).Put(nr);
        Emit(ring, format::kSysEnter, s.time);
      } else {
        int64_t ret = ReadRawField(s.raw, s.raw_size, tp_.exit_ret);
        Payload(buf_).Put(s.pid).Put(s.tid).Put(nr).Put(ret);
        Emit(ring, format::kSysExit, s.time);
      }
      break;
    }
    case EventKind::kCpuClock: {
      ++stats_.samples;
      // Where the BPF program reads the process, a sample without its record
      // is of a thread that runs no Python: reading later would only give
      // another moment's frames. Elsewhere (no BPF, or a process it refused)
      // the stack is read from memory now.
      uint32_t space = SpaceOf(s.pid);
      uint32_t cs = StackOf(ring, space, s, true, py, /*late=*/!spaces_[space].py_at_sample);
      Payload(buf_).Put(s.pid).Put(s.tid).Put(cs);
      Emit(ring, format::kCpuSample, s.time);
      break;
    }
    case EventKind::kPageFault: {
      uint32_t cs = StackOf(ring, SpaceOf(s.pid), s, false);
      Payload(buf_).Put(s.pid).Put(s.tid).Put(s.addr).Put(cs);
      Emit(ring, format::kPageFault, s.time);
      break;
    }
    case EventKind::kBlockIssue: {
      auto dev = static_cast<uint32_t>(ReadRawField(s.raw, s.raw_size, tp_.block_dev));
      auto sector = static_cast<uint64_t>(ReadRawField(s.raw, s.raw_size, tp_.block_sector));
      auto bytes = static_cast<uint32_t>(ReadRawField(s.raw, s.raw_size, tp_.block_bytes));
      std::string rwbs;
      const TracepointField& f = tp_.block_rwbs;
      if (f.size && f.offset < s.raw_size) {
        size_t n = std::min<size_t>(f.size, s.raw_size - f.offset);
        const char* p = reinterpret_cast<const char*>(s.raw + f.offset);
        rwbs.assign(p, strnlen(p, n));
      }
      Payload(buf_).Put(s.pid).Put(s.tid).Put(dev).Put(sector).Put(bytes).Str(rwbs);
      Emit(ring, format::kBlockIssue, s.time);
      break;
    }
    case EventKind::kLeader:
    case EventKind::kPythonStack: ++stats_.unknown; break;
  }
}

void OsEncoder::MapPending() {
  for (const PendingFrame& p : pending_) {
    MappedFrame f{p.id, p.ring, p.space == kKernelSpace, p.pc};
    if (!f.kernel) {
      if (const Mapping* m = spaces_[p.space].as.Find(p.pc)) {
        std::string key = m->build_id + '\0' + m->path;
        auto it = mapping_index_.find(key);
        if (it == mapping_index_.end()) {
          it = mapping_index_.emplace(key, static_cast<int32_t>(mappings_.size())).first;
          mappings_.push_back(*m);
        }
        f.mapping = it->second;
        f.offset = p.pc - m->start + m->pgoff;
      }
    }
    mapped_.push_back(f);
  }
  pending_.clear();
}

void OsEncoder::ResolveFrames() {
  MapPending();
  for (const MappedFrame& f : mapped_) {
    SymbolInfo si;
    if (f.kernel) {
      si = symbolizer_.SymbolizeKernel(f.pc);
    } else if (f.mapping < 0) {
      si.function = "[unknown]";
      si.module = "[unknown]";
    } else {
      // A one-mapping address space: the frame's file at offset 0.
      const Mapping& m = mappings_[static_cast<size_t>(f.mapping)];
      AddressSpace one;
      one.Add({0, UINT64_MAX, 0, m.path, m.build_id});
      si = symbolizer_.Symbolize(one, f.offset);
    }
    uint8_t kind = f.kernel ? format::kFrameKernel : format::kFrameNative;
    Payload(buf_).Put(f.id).Put(kind).Put(f.pc).Str(si.function).Str(si.module).Put<uint32_t>(0);
    uint64_t ts = f.ring < streams_.size() && streams_[f.ring] ? streams_[f.ring]->last_timestamp() : 0;
    Emit(f.ring, format::kFrame, ts);
    ++stats_.frames;
  }
  mapped_.clear();
}

}  // namespace strata::collectors::os

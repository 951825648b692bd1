// make_fuzz_seeds: writes seed inputs for the fuzz targets whose input is not a
// file strata reads as such (docs/fuzzing.md, "Seeds").
//
//   make_fuzz_seeds decoders TRACE_DIR OUT [EVENTS]
//       a strata trace as fuzz_decoders' records (fuzz/trace_records.h): the
//       first EVENTS events (default 200) of up to 4 streams per class
//   make_fuzz_seeds python-stacks OUT_DIR
//       interpreter memory images for fuzz_python_stacks (fuzz/python_image.h)
//   make_fuzz_seeds perf-dwarf OUT
//       perf ring records for fuzz_perf_records: an MMAP2 of this system's libc
//       and a sample whose registers and stack copy libdw unwinds through it
#include <dlfcn.h>
#include <linux/perf_event.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "base/files.h"
#include "collectors/os/perf_records.h"
#include "format/ctf_reader.h"
#include "format/tsdl.h"
#include "fuzz/python_image.h"
#include "fuzz/trace_records.h"

namespace {

using namespace strata;

int Fail(const std::string& what) {
  std::fprintf(stderr, "make_fuzz_seeds: %s\n", what.c_str());
  return 1;
}

int Decoders(const std::string& dir, const std::string& out, size_t max_events) {
  std::string ctf = dir + "/ctf";
  auto text = ReadFile(ctf + "/metadata");
  if (!text.ok()) return Fail(text.status().message());
  auto md = format::ParseMetadata(*text);
  if (!md.ok()) return Fail(md.status().message());
  auto names = ListFiles(ctf);
  if (!names.ok()) return Fail(names.status().message());
  struct Rec {
    uint64_t ts;
    uint32_t cls, inst;
    bool new_packet, lost;
    uint32_t index;
    std::vector<uint8_t> payload;
  };
  std::vector<Rec> recs;
  std::map<uint64_t, uint32_t> pids;  // real pid -> 0/1 (the records' two processes)
  uint32_t used[4] = {};              // instances taken, per class (bit mask)
  for (const std::string& n : *names) {
    if (n == "metadata" || n[0] == '.') continue;
    auto map = MappedFile::Open(ctf + "/" + n);
    if (!map.ok()) return Fail(map.status().message());
    format::StreamFileReader r(*md, map->data(), map->size(), n);
    format::Packet pk;
    format::EventView ev;
    uint32_t inst = UINT32_MAX, cls = 0;
    size_t events = 0;
    uint64_t discarded = 0;
    while (r.NextPacket(&pk) && events < max_events) {
      if (inst == UINT32_MAX) {
        cls = pk.stream_id;
        if (cls >= 4) break;
        // The instance's parity is its process (StreamContext): keep each stream with its pid.
        uint32_t want = 0;
        if (cls != format::kCpuStream) {
          auto [it, fresh] = pids.try_emplace(pk.context.empty() ? 0 : pk.context[0], static_cast<uint32_t>(pids.size()));
          if (it->second > 1) break;  // a third process: left out
          want = it->second;
        }
        for (uint32_t i = want; i < fuzz::kInstances; i += cls == format::kCpuStream ? 1 : 2)
          if (!(used[cls] & (1u << i))) {
            inst = i;
            break;
          }
        if (inst == UINT32_MAX) break;
        used[cls] |= 1u << inst;
      }
      bool first_in_packet = true;
      while (r.NextEvent(&ev) && events++ < max_events) {
        const format::StreamSpec& spec = *format::FindStream(cls);
        auto e = std::find_if(spec.events.begin(), spec.events.end(), [&](const format::EventSpec& s) { return s.id == ev.id; });
        if (e == spec.events.end()) continue;
        recs.push_back({ev.ts, cls, inst, first_in_packet, pk.discarded > discarded,
                        static_cast<uint32_t>(e - spec.events.begin()),
                        std::vector<uint8_t>(ev.payload, ev.payload + ev.size)});
        discarded = pk.discarded;
        first_in_packet = false;
      }
      if (!r.status().ok()) break;
    }
  }
  std::stable_sort(recs.begin(), recs.end(), [](const Rec& a, const Rec& b) { return a.ts < b.ts; });
  std::string bytes(8, '\0');
  std::memcpy(bytes.data(), &md->clock_offset_ns, 8);
  uint64_t ts = 1000;
  bool first = true;
  for (const Rec& r : recs) {
    if (first) ts = r.ts;  // the first record starts at the target's origin
    first = false;
    const format::EventSpec& e = format::FindStream(r.cls)->events[r.index];
    auto ctl = static_cast<uint8_t>(r.cls | (r.inst << 2) | (r.lost ? 0x40 : 0) | (r.new_packet ? 0x80 : 0));
    fuzz::AppendRecord(&bytes, ctl, static_cast<uint8_t>(r.index), r.ts - ts, e, r.payload.data(),
                       static_cast<uint32_t>(r.payload.size()));
    ts = r.ts;
  }
  Status st = WriteFileAtomic(out, bytes);
  if (!st.ok()) return Fail(st.message());
  std::printf("%s: %zu records, %zu bytes\n", out.c_str(), recs.size(), bytes.size());
  return 0;
}

int PythonStacks(const std::string& out_dir) {
  const StrataPyLayout* l = StrataPythonLayout(0x030b0000);  // the images are 3.11's
  auto write = [&](const std::string& name, const fuzz::PyImage& img) {
    const auto& b = img.bytes();
    Status st = WriteFileAtomic(out_dir + "/" + name, std::string_view(reinterpret_cast<const char*>(b.data()), b.size()));
    if (!st.ok()) std::exit(Fail(st.message()));
  };
  {  // Three frames on the second of two threads.
    fuzz::PyImage img(*l);
    uint64_t step = img.Code("Trainer.step", "/home/u/train.py", 42);
    uint64_t fwd = img.Code("Net.forward", "/home/u/model.py", 10);
    uint64_t mod = img.Code("<module>", "/home/u/train.py", 1);
    uint64_t t2 = img.Thread(4243, img.Frames({fwd, step, mod}), 0);
    uint64_t t1 = img.Thread(4242, img.Frames({mod}), t2);
    img.Runtime(t1, 4243);
    write("two-threads", img);
  }
  {  // Non-ASCII names (read through their UTF-8 copies); a frame without code ends the walk.
    fuzz::PyImage img(*l);
    uint64_t c = img.Code("données.charger", "/home/u/entrée.py", 7);
    uint64_t frames = img.Frames({c, c, 0});
    img.Runtime(img.Thread(77, frames, 0), 77);
    write("non-ascii", img);
  }
  {  // A frame chain that loops on itself: the depth bound ends it.
    fuzz::PyImage img(*l);
    uint64_t f = img.Frames({img.Code("spin", "/x.py", 3)});
    img.Put64(f + l->frame_previous, f);
    img.Runtime(img.Thread(9, f, 0), 9);
    write("frame-loop", img);
  }
  return 0;
}

// perf_event ring records, as the kernel lays them out.
struct Ring {
  std::string b;
  void U64(uint64_t v) { b.append(reinterpret_cast<const char*>(&v), 8); }
  void U32s(uint32_t x, uint32_t y) {
    b.append(reinterpret_cast<const char*>(&x), 4);
    b.append(reinterpret_cast<const char*>(&y), 4);
  }
  size_t Begin(uint32_t type) {
    size_t at = b.size();
    perf_event_header h{type, 0, 0};
    b.append(reinterpret_cast<const char*>(&h), sizeof h);
    return at;
  }
  void End(size_t at) {
    auto size = static_cast<uint16_t>(b.size() - at);
    std::memcpy(&b[at + 6], &size, 2);
  }
  void SampleId(uint32_t pid, uint64_t time, uint64_t id) {
    U32s(pid, pid);
    U64(time);
    U32s(0, 0);
    U64(id);
  }
};

int PerfDwarf(const std::string& out) {
  // This system's libc: its path, and file offsets of two functions in it (from
  // libc itself: a sanitizer build intercepts both in the executable).
  void* h = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
  void* fw = h ? dlsym(h, "fwrite") : nullptr;
  void* qs = h ? dlsym(h, "qsort") : nullptr;
  Dl_info info;
  if (!fw || !qs || !dladdr(fw, &info) || !info.dli_fname) return Fail("libc's fwrite and qsort not found");
  std::string libc = info.dli_fname;
  auto fbase = reinterpret_cast<uint64_t>(info.dli_fbase);
  uint64_t ip_off = reinterpret_cast<uint64_t>(fw) - fbase;
  uint64_t ret_off = reinterpret_cast<uint64_t>(qs) - fbase + 0x20;
  struct stat st;
  if (::stat(libc.c_str(), &st) != 0) return Fail("stat " + libc);
  const uint64_t base = 0x7f1000000000, sp = 0x7ffd00001000;
  const uint32_t pid = 4242;
  Ring r;
  size_t at = r.Begin(PERF_RECORD_MMAP2);
  r.U32s(pid, pid);
  r.U64(base);
  r.U64((static_cast<uint64_t>(st.st_size) + 4095) & ~uint64_t{4095});
  r.U64(0);
  r.U32s(0, 0);
  r.U64(0);
  r.U64(0);
  r.U32s(5 /* PROT_READ | PROT_EXEC */, 2 /* MAP_PRIVATE */);
  std::string name = libc;
  name.resize((name.size() + 8) & ~size_t{7}, '\0');
  r.b += name;
  r.SampleId(pid, 1000, 1);
  r.End(at);
  // A CPU sample (event 9) at fwrite's entry: the return address is on top of the stack.
  at = r.Begin(PERF_RECORD_SAMPLE);
  r.U64(9);                 // identifier
  r.U64(base + ip_off);     // ip
  r.U32s(pid, pid);         // pid, tid
  r.U64(2000);              // time
  r.U32s(0, 0);             // cpu
  r.U64(1);                 // callchain: the ip
  r.U64(base + ip_off);
  r.U64(PERF_SAMPLE_REGS_ABI_64);
  for (uint32_t i = 0; i < strata::collectors::os::kX86NumRegs; ++i)
    r.U64(i == strata::collectors::os::kSp ? sp : i == strata::collectors::os::kIp ? base + ip_off : i == strata::collectors::os::kBp ? sp + 64 : i);
  const uint64_t stack_size = 256;
  r.U64(stack_size);
  for (uint64_t i = 0; i < stack_size / 8; ++i) r.U64(i == 0 ? base + ret_off : i == 8 ? sp + 128 : i == 9 ? base + ret_off + 8 : 0);
  r.U64(stack_size);        // dyn_size
  r.End(at);
  Status s = WriteFileAtomic(out, r.b);
  if (!s.ok()) return Fail(s.message());
  std::printf("%s: %zu bytes (libc %s)\n", out.c_str(), r.b.size(), libc.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> a(argv + 1, argv + argc);
  if (a.size() >= 3 && a[0] == "decoders")
    return Decoders(a[1], a[2], a.size() > 3 ? std::strtoull(a[3].c_str(), nullptr, 10) : 200);
  if (a.size() == 2 && a[0] == "python-stacks") return PythonStacks(a[1]);
  if (a.size() == 2 && a[0] == "perf-dwarf") return PerfDwarf(a[1]);
  std::fprintf(stderr,
               "usage: make_fuzz_seeds decoders TRACE_DIR OUT [EVENTS] | python-stacks OUT_DIR | perf-dwarf OUT\n");
  return 2;
}

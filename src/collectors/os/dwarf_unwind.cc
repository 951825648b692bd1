#include "collectors/os/dwarf_unwind.h"

#include <dwarf.h>
#include <elfutils/libdwfl.h>

#include <cstring>

namespace strata::collectors::os {

struct DwarfUnwinder::Space {
  Dwfl* dwfl = nullptr;
  uint64_t generation = UINT64_MAX;
  bool attached = false;
  uint32_t pid = 0;
  // The sample being unwound (valid during Unwind only).
  const SampleRecord* sample = nullptr;
  ~Space() {
    if (dwfl) dwfl_end(dwfl);
  }
};

namespace {

const Dwfl_Callbacks kOfflineCallbacks = {
    dwfl_build_id_find_elf,
    dwfl_standard_find_debuginfo,
    dwfl_offline_section_address,
    nullptr,
};

using Space = DwarfUnwinder::Space;

pid_t NextThread(Dwfl*, void* arg, void** thread_arg) {
  if (*thread_arg) return 0;
  *thread_arg = arg;
  return static_cast<pid_t>(static_cast<Space*>(arg)->sample->tid);
}

bool GetThread(Dwfl*, pid_t, void* arg, void** thread_arg) {
  *thread_arg = arg;
  return true;
}

bool MemoryRead(Dwfl*, Dwarf_Addr addr, Dwarf_Word* result, void* arg) {
  const SampleRecord* s = static_cast<Space*>(arg)->sample;
  uint64_t sp = s->Reg(kSp);
  if (addr < sp || addr + 8 > sp + s->stack_size || addr + 8 < addr) return false;
  std::memcpy(result, s->stack + (addr - sp), 8);
  return true;
}

bool SetInitialRegisters(Dwfl_Thread* thread, void* arg) {
  const SampleRecord* s = static_cast<Space*>(arg)->sample;
  // perf's x86 order (AX BX CX DX SI DI BP SP IP R8..R15) to DWARF's
  // (rax rdx rcx rbx rsi rdi rbp rsp r8..r15 rip).
  Dwarf_Word d[17];
  d[0] = s->Reg(kAx);
  d[1] = s->Reg(kDx);
  d[2] = s->Reg(kCx);
  d[3] = s->Reg(kBx);
  d[4] = s->Reg(kSi);
  d[5] = s->Reg(kDi);
  d[6] = s->Reg(kBp);
  d[7] = s->Reg(kSp);
  for (uint32_t i = 0; i < 8; ++i) d[8 + i] = s->Reg(kR8 + i);
  d[16] = s->Reg(kIp);
  return dwfl_thread_state_registers(thread, 0, 17, d);
}

const Dwfl_Thread_Callbacks kThreadCallbacks = {NextThread, GetThread, MemoryRead, SetInitialRegisters, nullptr, nullptr};

struct FrameCollector {
  std::vector<uint64_t>* pcs;
  size_t max;
};

int OnFrame(Dwfl_Frame* frame, void* arg) {
  auto* c = static_cast<FrameCollector*>(arg);
  Dwarf_Addr pc;
  bool activation = false;
  if (!dwfl_frame_pc(frame, &pc, &activation)) return DWARF_CB_ABORT;
  c->pcs->push_back(pc);
  return c->pcs->size() < c->max ? DWARF_CB_OK : DWARF_CB_ABORT;
}

}  // namespace

DwarfUnwinder::DwarfUnwinder(Symbolizer* symbolizer) : symbolizer_(symbolizer) {}
DwarfUnwinder::~DwarfUnwinder() = default;

void DwarfUnwinder::Forget(uint32_t as_id) { spaces_.erase(as_id); }

bool DwarfUnwinder::Unwind(uint32_t as_id, const AddressSpace& as, const SampleRecord& s, std::vector<uint64_t>* pcs,
                           size_t max_frames) {
  if (s.regs_abi == 0 || s.num_regs < kX86NumRegs || !s.stack || s.stack_size == 0) return false;
  auto& slot = spaces_[as_id];
  if (!slot) slot = std::make_unique<Space>();
  Space& sp = *slot;
  if (sp.generation != as.generation() || sp.pid != s.pid) {
    // (Re)report the modules. A Dwfl cannot drop modules, so a changed map means a new Dwfl.
    if (sp.dwfl) dwfl_end(sp.dwfl);
    sp.dwfl = dwfl_begin(&kOfflineCallbacks);
    sp.attached = false;
    sp.generation = as.generation();
    sp.pid = s.pid;
    if (!sp.dwfl) return false;
    dwfl_report_begin(sp.dwfl);
    std::string last;
    for (const Mapping& m : as.mappings()) {
      if (m.path.empty() || m.path[0] != '/' || m.path == last) continue;
      last = m.path;
      // The load bias: where the file's offset 0 sits. ET_EXEC files are linked at
      // their run-time addresses; libdw wants 0 for them.
      uint64_t base = symbolizer_->IsExecFile(m.path) ? 0 : m.start - m.pgoff;
      dwfl_report_elf(sp.dwfl, m.path.c_str(), m.path.c_str(), -1, base, false);
    }
    dwfl_report_end(sp.dwfl, nullptr, nullptr);
  }
  sp.sample = &s;
  if (!sp.attached) {
    if (!dwfl_attach_state(sp.dwfl, nullptr, static_cast<pid_t>(s.pid), &kThreadCallbacks, &sp)) return false;
    sp.attached = true;
  }
  FrameCollector c{pcs, max_frames};
  size_t before = pcs->size();
  dwfl_getthread_frames(sp.dwfl, static_cast<pid_t>(s.tid), OnFrame, &c);
  sp.sample = nullptr;
  return pcs->size() > before;
}

}  // namespace strata::collectors::os

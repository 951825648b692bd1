// OS-level event classes (cpu stream); ids and payloads are documented in schema_os.h.
#include "format/schema_os.h"

#include "format/schema.h"

namespace strata::format {
namespace {

using F = FieldSpec;
using T = FieldType;

constexpr F kSwitchOutFields[] = {{"pid", T::kU32}, {"tid", T::kU32}, {"preempted", T::kU8}};
constexpr F kSwitchInFields[] = {{"pid", T::kU32}, {"tid", T::kU32}};
constexpr F kSysEnterFields[] = {{"pid", T::kU32}, {"tid", T::kU32}, {"nr", T::kU32}};
constexpr F kSysExitFields[] = {{"pid", T::kU32}, {"tid", T::kU32}, {"nr", T::kU32}, {"ret", T::kI64}};
constexpr F kSchedSwitchFields[] = {
    {"pid", T::kU32}, {"tid", T::kU32}, {"prev_state", T::kU64}, {"next_tid", T::kU32}, {"stack", T::kU32}};
constexpr F kSchedWakeupFields[] = {
    {"waker_pid", T::kU32}, {"waker_tid", T::kU32}, {"tid", T::kU32}, {"target_cpu", T::kU32}};
constexpr F kCpuSampleFields[] = {{"pid", T::kU32}, {"tid", T::kU32}, {"stack", T::kU32}};
constexpr F kPageFaultFields[] = {{"pid", T::kU32}, {"tid", T::kU32}, {"addr", T::kU64}, {"stack", T::kU32}};
constexpr F kBlockIssueFields[] = {{"pid", T::kU32},    {"tid", T::kU32},   {"dev", T::kU32},
                                   {"sector", T::kU64}, {"bytes", T::kU32}, {"rwbs", T::kString}};
constexpr F kTaskFields[] = {{"pid", T::kU32}, {"ppid", T::kU32}, {"tid", T::kU32}, {"ptid", T::kU32}};
constexpr F kCommFields[] = {{"pid", T::kU32}, {"tid", T::kU32}, {"exec", T::kU8}, {"comm", T::kString}};
constexpr F kMmapFields[] = {{"pid", T::kU32},   {"tid", T::kU32},          {"start", T::kU64},
                             {"len", T::kU64},   {"pgoff", T::kU64},        {"build_id", T::kString},
                             {"path", T::kString}};
constexpr F kFrameFields[] = {{"id", T::kU32},           {"kind", T::kU8},          {"pc", T::kU64},
                              {"function", T::kString},  {"module", T::kString},    {"line", T::kU32}};
constexpr F kCallsiteFields[] = {{"id", T::kU32}, {"parent", T::kU32}, {"frame", T::kU32}};
constexpr F kSyscallNameFields[] = {{"nr", T::kU32}, {"name", T::kString}};
constexpr F kLostFields[] = {{"lost", T::kU64}};
constexpr F kThreadStatFields[] = {{"pid", T::kU32},      {"tid", T::kU32},      {"utime_ns", T::kU64},
                                   {"stime_ns", T::kU64}, {"vol_cs", T::kU64},   {"invol_cs", T::kU64},
                                   {"cpu", T::kU32}};
constexpr F kProcessStatFields[] = {{"pid", T::kU32},        {"rss_bytes", T::kU64},   {"vm_bytes", T::kU64},
                                    {"rchar", T::kU64},      {"wchar", T::kU64},       {"read_bytes", T::kU64},
                                    {"write_bytes", T::kU64}, {"minflt", T::kU64},     {"majflt", T::kU64},
                                    {"threads", T::kU32}};

constexpr EventSpec kCpuEvents[] = {
    {kSwitchOut, "switch_out", kSwitchOutFields},
    {kSwitchIn, "switch_in", kSwitchInFields},
    {kSysEnter, "sys_enter", kSysEnterFields},
    {kSysExit, "sys_exit", kSysExitFields},
    {kSchedSwitch, "sched_switch", kSchedSwitchFields},
    {kSchedWakeup, "sched_wakeup", kSchedWakeupFields},
    {kCpuSample, "cpu_sample", kCpuSampleFields},
    {kPageFault, "page_fault", kPageFaultFields},
    {kBlockIssue, "block_issue", kBlockIssueFields},
    {kTaskNew, "task_new", kTaskFields},
    {kTaskExit, "task_exit", kTaskFields},
    {kComm, "comm", kCommFields},
    {kMmap, "mmap", kMmapFields},
    {kFrame, "frame", kFrameFields},
    {kCallsite, "callsite", kCallsiteFields},
    {kSyscallName, "syscall_name", kSyscallNameFields},
    {kLost, "lost", kLostFields},
    {kThreadStat, "thread_stat", kThreadStatFields},
    {kProcessStat, "process_stat", kProcessStatFields},
};

constexpr EventSet kSets[] = {{kCpuStream, kCpuEvents}};

}  // namespace

std::span<const EventSet> OsEventSets() { return kSets; }

}  // namespace strata::format

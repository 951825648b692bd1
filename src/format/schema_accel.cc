// Accelerator event classes: runtime/driver API calls (thread stream), device
// activity (device stream), device and queue descriptions (process stream).
// Field meanings and value numbering: format/schema_accel.h.
#include "format/schema_accel.h"

#include "format/payloads_accel.h"
#include "format/schema.h"

namespace strata::format {
namespace {

using F = FieldSpec;
using T = FieldType;

constexpr F kApiBeginFields[] = {{"name", T::kU32}, {"domain", T::kU8}, {"correlation", T::kU64}};
constexpr F kApiEndFields[] = {{"result", T::kI64}};
constexpr F kApiLaunchFields[] = {
    {"correlation", T::kU64}, {"kernel", T::kU32},     {"grid_x", T::kU32},  {"grid_y", T::kU32},
    {"grid_z", T::kU32},      {"block_x", T::kU32},    {"block_y", T::kU32}, {"block_z", T::kU32},
    {"shared_mem", T::kU32},  {"device", T::kU32},     {"queue", T::kU64}};
constexpr F kApiArgFields[] = {{"key", T::kU32}, {"value", T::kU64}};
constexpr F kApiArgStrFields[] = {{"key", T::kU32}, {"value", T::kU32}};
constexpr F kRangeBeginFields[] = {{"id", T::kU64}, {"name", T::kU32}, {"domain", T::kU32}};
constexpr F kRangeEndFields[] = {{"id", T::kU64}};
constexpr F kOverheadFields[] = {{"end", T::kU64}, {"name", T::kU32}};
constexpr F kApiCallFields[] = {
    {"end", T::kU64}, {"name", T::kU32}, {"domain", T::kU8}, {"correlation", T::kU64}, {"result", T::kI64}};

constexpr EventSpec kThreadEvents[] = {
    {kApiBegin, "api_begin", kApiBeginFields},     {kApiEnd, "api_end", kApiEndFields},
    {kApiLaunch, "api_launch", kApiLaunchFields},  {kApiArg, "api_arg", kApiArgFields},
    {kApiArgStr, "api_arg_str", kApiArgStrFields}, {kRangeBegin, "range_begin", kRangeBeginFields},
    {kRangeEnd, "range_end", kRangeEndFields},     {kOverhead, "overhead", kOverheadFields},
    {kApiCall, "api_call", kApiCallFields},
};

constexpr EventSpec kDeviceEvents[] = {
    // (Their fields: format/payloads_accel.h, shared with the collectors and the importer.)
    {kDevKernel, "kernel", KernelPayload::kFields},       {kDevMemcpy, "memcpy", MemcpyPayload::kFields},
    {kDevMemset, "memset", MemsetPayload::kFields},       {kDevSync, "sync", SyncPayload::kFields},
    {kDevMemory, "memory", MemoryPayload::kFields},       {kDevCommand, "command", CommandPayload::kFields},
    {kDevKernel32, "kernel32", Kernel32Payload::kFields}, {kDevMemcpy32, "memcpy32", Memcpy32Payload::kFields},
};

constexpr F kDeviceInfoFields[] = {
    {"device", T::kU32},           {"api", T::kString},          {"name", T::kString},
    {"vendor", T::kString},        {"compute_units", T::kU32},   {"clock_khz", T::kU32},
    {"memory_bytes", T::kU64},     {"memory_bandwidth", T::kF64}, {"peak_flops_f64", T::kF64},
    {"peak_flops_f32", T::kF64},   {"peak_flops_f16", T::kF64},  {"properties", T::kString}};
constexpr F kQueueInfoFields[] = {{"device", T::kU32}, {"queue", T::kU64}, {"name", T::kString}};
constexpr F kRecordsLostFields[] = {{"source", T::kString}, {"total", T::kU64}};
constexpr F kKernelMetricsFields[] = {
    {"correlation", T::kU64},    {"device", T::kU32},     {"flops_f64", T::kF64},
    {"flops_f32", T::kF64},      {"flops_f16", T::kF64},  {"dram_bytes", T::kF64},
    {"achieved_occupancy", T::kF64}, {"metrics", T::kString}};

constexpr EventSpec kProcessEvents[] = {
    {kDeviceInfo, "device_info", kDeviceInfoFields},
    {kQueueInfo, "queue_info", kQueueInfoFields},
    {kRecordsLost, "records_lost", kRecordsLostFields},
    {kKernelMetrics, "kernel_metrics", kKernelMetricsFields},
};

constexpr EventSet kSets[] = {
    {kThreadStream, kThreadEvents}, {kDeviceStream, kDeviceEvents}, {kProcessStream, kProcessEvents}};

}  // namespace

std::span<const EventSet> AccelEventSets() { return kSets; }

}  // namespace strata::format

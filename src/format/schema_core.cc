// Core event classes: instrumentation spans, steps, counters, flows; process facts.
#include "format/schema.h"

namespace strata::format {
namespace {

using F = FieldSpec;
using T = FieldType;

constexpr F kName[] = {{"name", T::kU32}};
constexpr F kCounterFields[] = {{"name", T::kU32}, {"value", T::kF64}};
constexpr F kFlow[] = {{"flow", T::kU64}};
constexpr F kStep[] = {{"step", T::kU64}};
constexpr F kNameArg[] = {{"name", T::kU32}, {"arg", T::kU64}};
constexpr F kName16[] = {{"name", T::kU16}};
constexpr F kStep32[] = {{"step", T::kU32}};
constexpr F kFlow32[] = {{"flow", T::kU32}};
constexpr F kCounter16Fields[] = {{"name", T::kU16}, {"value", T::kI32}};
constexpr F kCounter8Fields[] = {{"name", T::kU16}, {"value", T::kI16}};

constexpr EventSpec kThreadEvents[] = {
    {kSpanBegin, "span_begin", kName},
    {kSpanEnd, "span_end", {}},
    {kInstant, "instant", kName},
    {kCounter, "counter", kCounterFields},
    {kFlowOut, "flow_out", kFlow},
    {kFlowIn, "flow_in", kFlow},
    {kStepBegin, "step_begin", kStep},
    {kStepEnd, "step_end", kStep},
    {kSpanBeginArg, "span_begin_arg", kNameArg},
    {kStepBegin32, "step_begin32", kStep32},
    {kStepEnd32, "step_end32", kStep32},
    {kCounter8, "counter8", kCounter8Fields},
    {kSpanBegin16, "span_begin16", kName16},
    {kFlowOut32, "flow_out32", kFlow32},
    {kFlowIn32, "flow_in32", kFlow32},
    {kCounter16, "counter16", kCounter16Fields},
};

constexpr F kNameDefFields[] = {{"id", T::kU32}, {"name", T::kString}};
constexpr F kThreadNameFields[] = {{"tid", T::kU32}, {"name", T::kString}};
constexpr F kProcessInfoFields[] = {
    {"ppid", T::kU32}, {"start_realtime_ns", T::kU64}, {"exe", T::kString}, {"cmdline", T::kString}};
constexpr F kProcessRankFields[] = {{"rank", T::kI64},
                                     {"local_rank", T::kI64},
                                     {"world_size", T::kI64},
                                     {"variable", T::kString},
                                     {"job", T::kString}};
constexpr F kCollectorStatusFields[] = {
    {"collector", T::kString}, {"state", T::kString}, {"detail", T::kString}};

constexpr EventSpec kProcessEvents[] = {
    {kNameDef, "name_def", kNameDefFields},
    {kThreadName, "thread_name", kThreadNameFields},
    {kProcessInfo, "process_info", kProcessInfoFields},
    {kProcessRank, "process_rank", kProcessRankFields},
    {kCollectorStatus, "collector_status", kCollectorStatusFields},
};

constexpr EventSet kSets[] = {{kThreadStream, kThreadEvents}, {kProcessStream, kProcessEvents}};

}  // namespace

std::span<const EventSet> CoreEventSets() { return kSets; }

}  // namespace strata::format

// LTTng-UST tracepoint provider for the side-by-side hot-path benchmark: one
// event with one 4-byte field, the same work as a strata instant.
#undef LTTNG_UST_TRACEPOINT_PROVIDER
#define LTTNG_UST_TRACEPOINT_PROVIDER strata_bench
#undef LTTNG_UST_TRACEPOINT_INCLUDE
#define LTTNG_UST_TRACEPOINT_INCLUDE "./lttng_tp.h"

#if !defined(STRATA_BENCH_LTTNG_TP_H) || defined(LTTNG_UST_TRACEPOINT_HEADER_MULTI_READ)
#define STRATA_BENCH_LTTNG_TP_H

#include <lttng/tracepoint.h>

LTTNG_UST_TRACEPOINT_EVENT(strata_bench, event, LTTNG_UST_TP_ARGS(uint32_t, v),
                           LTTNG_UST_TP_FIELDS(lttng_ust_field_integer(uint32_t, v, v)))

#endif

#include <lttng/tracepoint-event.h>

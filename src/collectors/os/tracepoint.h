// The raw-payload fields strata reads from each tracepoint, resolved from the
// running kernel's tracefs format files (tracefs.h).
#pragma once

#include "collectors/os/tracefs.h"

namespace strata::collectors::os {

struct TracepointFields {
  // sched:sched_switch
  TracepointField switch_prev_pid, switch_prev_state, switch_next_pid;
  // sched:sched_wakeup
  TracepointField wakeup_pid, wakeup_target_cpu;
  // raw_syscalls:sys_enter / sys_exit
  TracepointField enter_id, exit_id, exit_ret;
  // block:block_rq_issue
  TracepointField block_dev, block_sector, block_bytes, block_rwbs;
};

}  // namespace strata::collectors::os

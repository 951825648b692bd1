// The Python stack of a sampled thread, read by the kernel at the instant of
// its CPU sample (a BPF program attached to strata's cpu-clock events), so
// that a sample's Python frames and the op it falls in are of the same moment.
//
// Why in the kernel: in CPython 3.11 the frames live in each thread's
// heap-allocated data stack and change with every call; the supervisor reads
// a sample milliseconds after it was taken, when the thread has moved on (the
// fallback without privilege, python_stacks.cc, does exactly that). Here the
// sampled thread is stopped in its timer interrupt while we walk its frames.
//
// For each sample of a thread of an interpreter the supervisor registered
// (`procs`: pid -> address of _PyRuntime and that interpreter's layout), the
// program finds the thread's PyThreadState (cached in `tstates`, checked
// against native_thread_id), walks cframe->current_frame (3.13:
// current_frame) and the `previous` links, marking the shim frames of entries
// from C (3.12+), and writes one record to
// the CPU's ring (`out`, a BPF_OUTPUT event sharing the ring of the sample,
// written just before the sample itself):
//
//   u32 magic 'PYST' | u32 tid | u32 pid | u32 frames | frames x { u64 code, u64 prev_instr }
//
// The supervisor names code objects and turns prev_instr into a line later:
// code objects live as long as their function, unlike the frames. Offsets
// come from the process's entry (python_layout.h's table for its version),
// so nothing here is tied to one build of CPython.
//
// Built with clang -target bpf (see CMakeLists.txt); loaded by python_bpf.cc.
#include <linux/bpf.h>
#include <linux/bpf_perf_event.h>
#include <bpf/bpf_helpers.h>

#define MAX_FRAMES 128  // a power of two: the index mask below
#define MAX_THREADS 256 // PyThreadStates scanned for an unknown thread
#define RECORD_MAGIC 0x54535950u  // "PYST"

#define FRAME_HEAD_BYTES 80  // what is read of each frame: f_code, previous, prev_instr and owner lie within

struct layout {
  __u64 runtime_interpreters_head;
  __u64 interp_threads_head;
  __u64 tstate_next;
  __u64 tstate_native_thread_id;
  __u64 tstate_cframe;
  __u64 cframe_current_frame;
  __u64 current_frame_direct;  // 1: tstate_cframe is the current frame's own field (3.13)
  __u64 frame_code;
  __u64 frame_previous;
  __u64 frame_prev_instr;
  __u64 frame_owner;
  __u64 cstack_owner;  // owner of frames to skip (3.12+ shims), 0xff for none
};

struct proc {
  __u64 runtime;  // address of _PyRuntime in the process
  struct layout l;
};

struct frame_out {
  __u64 code;
  __u64 prev_instr;
};

struct record {
  __u32 magic;
  __u32 tid;
  __u32 pid;
  __u32 frames;
  struct frame_out frame[MAX_FRAMES];
  // Not sent: the first FRAME_HEAD_BYTES of the frame being read. One read
  // per frame instead of one per field (each costs a fault-tolerant user
  // copy); the loader checks that the fields lie within them.
  __u64 frame_head[16];
};

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 4096);
  __type(key, __u32);  // pid
  __type(value, struct proc);
} procs SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_LRU_HASH);
  __uint(max_entries, 16384);
  __type(key, __u64);    // pid << 32 | tid
  __type(value, __u64);  // its PyThreadState
} tstates SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct record);
} scratch SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
  __uint(key_size, sizeof(__u32));
  __uint(value_size, sizeof(__u32));
} out SEC(".maps");

static __always_inline __u64 read_u64(__u64 addr) {
  __u64 v = 0;
  if (bpf_probe_read_user(&v, sizeof v, (const void*)addr) != 0) return 0;
  return v;
}

// The loops run under bpf_loop: the verifier checks a callback once, where it
// walks an unrolled loop's every iteration (268k instructions and a second of
// `strata record` start-up with plain loops).

struct thread_walk {
  const struct layout* l;
  __u64 ts;     // the PyThreadState being looked at, then the one found
  __u32 tid;
  int found;
};

static long thread_step(__u32 i, struct thread_walk* w) {
  if (!w->ts) return 1;
  if (read_u64(w->ts + w->l->tstate_native_thread_id) == w->tid) {
    w->found = 1;
    return 1;
  }
  w->ts = read_u64(w->ts + w->l->tstate_next);
  return 0;
}

static __always_inline __u64 find_tstate(const struct layout* l, __u64 runtime, __u32 pid, __u32 tid) {
  __u64 key = ((__u64)pid << 32) | tid;
  __u64* cached = bpf_map_lookup_elem(&tstates, &key);
  if (cached && *cached && read_u64(*cached + l->tstate_native_thread_id) == tid) return *cached;
  __u64 interp = read_u64(runtime + l->runtime_interpreters_head);
  if (!interp) return 0;
  struct thread_walk w = {l, read_u64(interp + l->interp_threads_head), tid, 0};
  bpf_loop(MAX_THREADS, thread_step, &w, 0);
  if (!w.found) return 0;
  bpf_map_update_elem(&tstates, &key, &w.ts, BPF_ANY);
  return w.ts;
}

struct frame_walk {
  const struct layout* l;
  struct record* r;
  __u64 frame;  // the next frame to read
  __u32 n;      // frames read
};

static long frame_step(__u32 i, struct frame_walk* w) {
  struct record* r = w->r;
  const struct layout* l = w->l;
  if (!w->frame || bpf_probe_read_user(r->frame_head, FRAME_HEAD_BYTES, (const void*)w->frame) != 0) return 1;
  __u64 code = r->frame_head[(l->frame_code / 8) & 15];
  if (!code) return 1;
  // A shim frame (3.12+) is sent with bit 0 of its code pointer set (code
  // objects are 8-byte aligned) and skipped when named: a frame counter that
  // skipped it here would be a value the verifier follows one by one.
  __u64 owner = (r->frame_head[(l->frame_owner / 8) & 15] >> ((l->frame_owner % 8) * 8)) & 0xff;
  r->frame[i & (MAX_FRAMES - 1)].code = code | (owner == l->cstack_owner ? 1 : 0);
  r->frame[i & (MAX_FRAMES - 1)].prev_instr = r->frame_head[(l->frame_prev_instr / 8) & 15];
  w->n = i + 1;
  w->frame = r->frame_head[(l->frame_previous / 8) & 15];
  return 0;
}

SEC("perf_event")
int python_stack(struct bpf_perf_event_data* ctx) {
  __u64 id = bpf_get_current_pid_tgid();
  __u32 pid = id >> 32, tid = (__u32)id;
  const struct proc* p = bpf_map_lookup_elem(&procs, &pid);
  if (!p) return 1;  // 1: the sample itself is written as usual
  const struct layout* l = &p->l;
  __u32 zero = 0;
  struct record* r = bpf_map_lookup_elem(&scratch, &zero);
  if (!r) return 1;
  __u64 ts = find_tstate(l, p->runtime, pid, tid);
  if (!ts) return 1;  // not a Python thread (torch's pool, strata's own)
  __u64 cframe = read_u64(ts + l->tstate_cframe);
  __u64 frame = l->current_frame_direct ? cframe : cframe ? read_u64(cframe + l->cframe_current_frame) : 0;
  struct frame_walk w = {l, r, frame, 0};
  bpf_loop(MAX_FRAMES, frame_step, &w, 0);
  __u32 n = w.n;
  r->magic = RECORD_MAGIC;
  r->tid = tid;
  r->pid = pid;
  r->frames = n;
  __u64 size = 16 + (__u64)n * sizeof(struct frame_out);
  if (size > 16 + sizeof r->frame) size = 16 + sizeof r->frame;
  bpf_perf_event_output(ctx, &out, BPF_F_CURRENT_CPU, r, size);
  return 1;
}

// The kernel lets only GPL-compatible programs read user memory and write perf records.
char LICENSE[] SEC("license") = "Dual BSD/GPL";

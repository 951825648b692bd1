#!/usr/bin/env python3
"""Writes a large LTTng-like kernel trace (CTF) for import benchmarks:

    bench/make_big_lttng.py OUT_DIR [EVENTS]   (default 2,000,000 events)

The layout of tests/lttng_synth.h (its KernelTrace's metadata): four CPUs, each
running 16 threads in turn; a thread makes read/close system calls between
its switches in and out. Packets hold 4,096 events.
"""
import os
import struct
import sys

ORIGIN_S = 1700000000
EVENTS = """event { name = "sched_switch"; id = 0; stream_id = 0; fields := struct { string prev_comm; int32_t prev_tid; int32_t prev_prio; int64_t prev_state; string next_comm; int32_t next_tid; int32_t next_prio; }; };
event { name = "syscall_entry_read"; id = 1; stream_id = 0; fields := struct { uint32_t fd; uint64_t buf; uint64_t count; }; };
event { name = "syscall_exit_read"; id = 2; stream_id = 0; fields := struct { int64_t ret; uint64_t buf; }; };
event { name = "syscall_entry_close"; id = 3; stream_id = 0; fields := struct { uint32_t fd; }; };
event { name = "syscall_exit_close"; id = 4; stream_id = 0; fields := struct { int64_t ret; }; };
"""


def metadata():
    return f"""/* CTF 1.8 */
typealias integer {{ size = 8; align = 8; signed = false; }} := uint8_t;
typealias integer {{ size = 32; align = 8; signed = false; }} := uint32_t;
typealias integer {{ size = 32; align = 8; signed = true; }} := int32_t;
typealias integer {{ size = 64; align = 8; signed = false; }} := uint64_t;
typealias integer {{ size = 64; align = 8; signed = true; }} := int64_t;
trace {{ major = 1; minor = 8; byte_order = le;
  packet.header := struct {{ uint32_t magic; uint32_t stream_id; }}; }};
env {{ hostname = "synth"; domain = "kernel"; tracer_name = "lttng-modules"; tracer_major = 2; tracer_minor = 11; }};
clock {{ name = "monotonic"; freq = 1000000000; offset_s = {ORIGIN_S}; offset = 0; }};
typealias integer {{ size = 64; align = 8; signed = false; map = clock.monotonic.value; }} := clk64_t;
stream {{ id = 0;
  packet.context := struct {{ clk64_t timestamp_begin; clk64_t timestamp_end; uint64_t content_size;
    uint64_t packet_size; uint64_t events_discarded; uint32_t cpu_id; }};
  event.header := struct {{ uint32_t id; clk64_t timestamp; }};
}};
""" + EVENTS


def cpu_events(cpu, n):
    """(id, ts, payload) of one CPU, in time order."""
    ts = 1000 + cpu * 7
    prev, prev_comm = 0, b"swapper/%d" % cpu
    k = 0
    out = []
    while len(out) < n:
        tid = 1000 + cpu * 16 + k % 16
        comm = b"worker-%d" % (tid % 16)
        out.append((0, ts, prev_comm + b"\0" + struct.pack("<iiq", prev, 20, 1) + comm + b"\0" + struct.pack("<ii", tid, 20)))
        ts += 500
        for _ in range(3):
            out.append((1, ts, struct.pack("<IQQ", 3, 0x1000, 4096)))
            ts += 700
            out.append((2, ts, struct.pack("<qQ", 4096, 0x1000)))
            ts += 300
            out.append((3, ts, struct.pack("<I", 3)))
            ts += 200
            out.append((4, ts, struct.pack("<q", 0)))
            ts += 300
        prev, prev_comm = tid, comm
        k += 1
    return out[:n]


def write_stream(path, cpu, events):
    with open(path, "wb") as f:
        for p in range(0, len(events), 4096):
            chunk = events[p:p + 4096]
            body = b"".join(struct.pack("<IQ", i, ts) + pl for i, ts, pl in chunk)
            bits = (8 + 44 + len(body)) * 8
            head = struct.pack("<IIQQQQQI", 0xC1FC1FC1, 0, chunk[0][1], chunk[-1][1], bits, bits, 0, cpu)
            f.write(head + body)


def main():
    out = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 2_000_000
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "metadata"), "w") as f:
        f.write(metadata())
    for cpu in range(4):
        write_stream(os.path.join(out, f"chan_{cpu}"), cpu, cpu_events(cpu, n // 4))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Writes the fuzz_xplane seeds (fuzz/corpus/xplane/): small XSpaces of our own
covering what the importer reads: a TF-like GPU space (host ops, launches named
after kernels, allocations, a Steps line), a JAX/ROCm-like one (hip launches, XLA
stats, vendor), a TPU-like plane without streams, aggregated events and a
truncated file. Needs protoc and Python's protobuf: python3 fuzz/xplane_seeds.py"""
import gzip, os, subprocess, sys, tempfile

here = os.path.dirname(os.path.abspath(__file__))
proto_dir = os.path.join(here, "..", "src", "importers", "xplane")
tmp = tempfile.mkdtemp()
subprocess.check_call(["protoc", "-I", proto_dir, "--python_out", tmp, os.path.join(proto_dir, "xplane.proto")])
sys.path.insert(0, tmp)
import xplane_pb2 as x  # noqa: E402


class Plane:
    def __init__(self, space, name):
        self.p = space.planes.add()
        self.p.name = name

    def stat(self, name):
        for k, v in self.p.stat_metadata.items():
            if v.name == name:
                return k
        k = len(self.p.stat_metadata) + 1
        self.p.stat_metadata[k].id = k
        self.p.stat_metadata[k].name = name
        return k

    def event(self, name, display=""):
        for k, v in self.p.event_metadata.items():
            if v.name == name:
                return k
        k = len(self.p.event_metadata) + 1
        self.p.event_metadata[k].id = k
        self.p.event_metadata[k].name = name
        self.p.event_metadata[k].display_name = display
        return k

    def line(self, lid, name, ts=1000):
        l = self.p.lines.add()
        l.id, l.name, l.timestamp_ns = lid, name, ts
        return l

    def add(self, line, name, off, dur, display="", **stats):
        e = line.events.add()
        e.metadata_id = self.event(name, display)
        e.offset_ps, e.duration_ps = off, dur
        for k, v in stats.items():
            s = e.stats.add()
            s.metadata_id = self.stat(k)
            if isinstance(v, str):
                s.str_value = v
            elif isinstance(v, float):
                s.double_value = v
            else:
                s.int64_value = v
        return e

    def plane_stat(self, name, v):
        s = self.p.stats.add()
        s.metadata_id = self.stat(name)
        if isinstance(v, str):
            s.str_value = v
        else:
            s.uint64_value = v


def tf_gpu():
    s = x.XSpace()
    s.hostnames.append("worker-0")
    d = Plane(s, "/device:GPU:0")
    for k, v in [("clock_rate", 1530000), ("core_count", 80), ("memory_size", 16 << 30),
                 ("memory_bandwidth", 898048000000), ("compute_cap_major", 7), ("compute_cap_minor", 0)]:
        d.plane_stat(k, v)
    c = d.line(7, "Stream #7(Compute)")
    d.add(c, "void gemm<float>(float*)", 3_000_000_000, 2_000_500, correlation_id=11,
          kernel_details="regs:38 shm:512 grid:160,1,1 block:1024,2,1", tf_op="m/MatMul:MatMul")
    m = d.line(8, "Stream #8(MemcpyH2D)")
    d.add(m, "MemcpyH2D", 2_000_000_000, 1_000_000, correlation_id=12, memcpy_details="size:4096 dest:0 async:1")
    d.add(d.line(-559038734, "TensorFlow Ops"), "m/MatMul:MatMul", 3_000_000_000, 2_000_500, "MatMul")
    d.add(d.line(-559038737, "Steps"), "0", 2_000_000_000, 4_000_000_000, group_id=0, step_name="0")
    h = Plane(s, "/host:CPU")
    t = h.line(4242, "python3")
    h.add(t, "FunctionRun", 0, 10_000_000_000, group_id=0)
    h.add(t, "$train.py:12 step", 100_000_000, 9_000_000_000, group_id=0)
    h.add(t, "m/MatMul:MatMul", 1_000_000_000, 1_500_000_000, "MatMul", group_id=0)
    h.add(t, "void gemm<float>(float*)", 1_100_000_000, 5_000_000, correlation_id=11)
    h.add(t, "MemcpyH2D", 1_200_000_000, 3_000_000, correlation_id=12, memcpy_details="size:4096 dest:0 async:1")
    h.add(t, "MemoryAllocation", 1_050_000_000, 0, allocator_name="GPU_0_bfc", allocation_bytes=4096,
          bytes_allocated=8192, bytes_reserved=0, addr=0x7000)
    h.add(t, "MemoryDeallocation", 9_050_000_000, 0, allocator_name="GPU_0_bfc", allocation_bytes=4096,
          bytes_allocated=4096, bytes_reserved=0, addr=0x7000)
    return s


def jax_rocm():
    s = x.XSpace()
    Plane(s, "/host:metadata")
    for dev in range(2):
        d = Plane(s, "/device:GPU:%d" % dev)
        d.plane_stat("device_vendor", "AMD")
        d.plane_stat("core_count", 304)
        l = d.line(16 + dev, "Stream #%d(Kernel)" % (16 + dev))
        d.add(l, "loop_fusion.kd", 26_345_875_000, 4_800_000, correlation_id=171 + dev,
              kernel_details="grid:1280,1,1 block:256,1,1 private_mem:0 group_mem:2112 occ_pct:0",
              hlo_op="loop_fusion", hlo_module="jit_step", program_id=15)
    h = Plane(s, "/host:CPU")
    for dev in range(2):
        t = h.line(583 + dev, "Host Threads/%d" % (583 + dev))
        h.add(t, "hipModuleLaunchKernel", 26_279_355_000, 57_520_000, device_id=47645 + dev,
              correlation_id=171 + dev, hlo_module="jit_step")
    return s


def tpu():
    s = x.XSpace()
    d = Plane(s, "/device:TPU:0")
    d.add(d.line(1, "XLA Modules"), "jit_step(1)", 0, 5_000_000_000)
    ops = d.line(2, "XLA Ops")
    d.add(ops, "fusion.1", 0, 2_000_000_000, hlo_op="fusion.1")
    d.add(ops, "convolution.2", 2_000_000_000, 3_000_000_000)
    return s


def odd():
    s = x.XSpace()
    s.errors.append("profiler buffer overflow")
    h = Plane(s, "/host:CPU")
    t = h.line(1, "t", ts=-5)
    e = t.events.add()
    e.metadata_id = h.event("aggregated")
    e.num_occurrences = 7
    h.add(t, "negative", -3_000, 1_000)
    h.add(t, "no metadata", 0, 1_000).metadata_id = 999
    h.add(t, "huge", 1 << 62, 1 << 62)
    Plane(s, "Task Environment").line(1, "x")
    return s


out = os.path.join(here, "corpus", "xplane")
os.makedirs(out, exist_ok=True)
for name, space in [("tf_gpu", tf_gpu()), ("jax_rocm", jax_rocm()), ("tpu", tpu()), ("odd", odd())]:
    b = space.SerializeToString()
    open(os.path.join(out, name + ".xplane.pb"), "wb").write(b)
    if name == "tf_gpu":
        open(os.path.join(out, "tf_gpu_truncated.xplane.pb"), "wb").write(b[: len(b) // 2])
        open(os.path.join(out, "tf_gpu.xplane.pb.gz"), "wb").write(gzip.compress(b, mtime=0))
print("wrote", sorted(os.listdir(out)))

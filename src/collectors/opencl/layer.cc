// libstrata_opencl.so: the OpenCL ICD-loader layer (design: tracer.h).
#include "collectors/opencl/layer_state.h"

#include <pthread.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "collectors/opencl/tracer.h"

namespace strata::opencl {
using namespace layer;  // NOLINT(google-build-using-namespace): this library's own internals
namespace {

// --- wrappers: contexts, queues --------------------------------------------------------------

cl_context CL_API_CALL W_clCreateContext(const cl_context_properties* props, cl_uint n, const cl_device_id* devs,
                                         void(CL_CALLBACK* notify)(const char*, const void*, size_t, void*), void* user,
                                         cl_int* err) {
  return ApiCall<cl_context>(k_clCreateContext, [&] { return g_next->clCreateContext(props, n, devs, notify, user, err); });
}

cl_context CL_API_CALL W_clCreateContextFromType(const cl_context_properties* props, cl_device_type type,
                                                 void(CL_CALLBACK* notify)(const char*, const void*, size_t, void*),
                                                 void* user, cl_int* err) {
  return ApiCall<cl_context>(k_clCreateContextFromType,
                             [&] { return g_next->clCreateContextFromType(props, type, notify, user, err); });
}

cl_command_queue CL_API_CALL W_clCreateCommandQueue(cl_context ctx, cl_device_id dev, cl_command_queue_properties props,
                                                    cl_int* err) {
  if (!On()) return g_next->clCreateCommandQueue(ctx, dev, props, err);
  bool forced = !(props & CL_QUEUE_PROFILING_ENABLE);
  cl_command_queue q = ApiCall<cl_command_queue>(k_clCreateCommandQueue, [&] {
    return g_next->clCreateCommandQueue(ctx, dev, props | CL_QUEUE_PROFILING_ENABLE, err);
  });
  if (q) RegisterQueue(q, dev, forced, true, {}, (props & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE) != 0);
  return q;
}

cl_command_queue CL_API_CALL W_clCreateCommandQueueWithProperties(cl_context ctx, cl_device_id dev,
                                                                  const cl_queue_properties* props, cl_int* err) {
  if (!On()) return g_next->clCreateCommandQueueWithProperties(ctx, dev, props, err);
  std::vector<cl_queue_properties> app, ours;
  bool seen = false, forced = false, ooo = false;
  for (const cl_queue_properties* it = props; it && it[0]; it += 2) {
    app.push_back(it[0]);
    app.push_back(it[1]);
    cl_queue_properties v = it[1];
    if (it[0] == CL_QUEUE_PROPERTIES) {
      seen = true;
      forced = !(v & CL_QUEUE_PROFILING_ENABLE);
      ooo = (v & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE) != 0;
      v |= CL_QUEUE_PROFILING_ENABLE;
    }
    ours.push_back(it[0]);
    ours.push_back(v);
  }
  if (!seen) {
    forced = true;
    ours.push_back(CL_QUEUE_PROPERTIES);
    ours.push_back(CL_QUEUE_PROFILING_ENABLE);
  }
  ours.push_back(0);
  if (props) app.push_back(0);
  cl_command_queue q = ApiCall<cl_command_queue>(k_clCreateCommandQueueWithProperties, [&] {
    return g_next->clCreateCommandQueueWithProperties(ctx, dev, ours.data(), err);
  });
  if (q) RegisterQueue(q, dev, forced, true, std::move(app), ooo);
  return q;
}

// The program asked for a queue without profiling: it sees one without profiling.
cl_int CL_API_CALL W_clGetCommandQueueInfo(cl_command_queue q, cl_command_queue_info what, size_t size, void* value,
                                           size_t* size_ret) {
  cl_int rc = g_next->clGetCommandQueueInfo(q, what, size, value, size_ret);
  if (rc != CL_SUCCESS || !On() || !value) return rc;
  QueueRec* r = nullptr;
  {
    std::lock_guard<std::mutex> lk(g_mu);
    auto it = g_queues.find(q);
    if (it != g_queues.end()) r = it->second;
  }
  if (!r || !r->forced) return rc;
  if (what == CL_QUEUE_PROPERTIES && size >= sizeof(cl_command_queue_properties)) {
    cl_command_queue_properties p;
    std::memcpy(&p, value, sizeof p);
    p &= ~static_cast<cl_command_queue_properties>(CL_QUEUE_PROFILING_ENABLE);
    std::memcpy(value, &p, sizeof p);
  } else if (what == CL_QUEUE_PROPERTIES_ARRAY) {
    size_t bytes = r->app_props.size() * sizeof(cl_queue_properties);
    if (size_ret) *size_ret = bytes;
    if (size < bytes) return CL_INVALID_VALUE;
    if (bytes) std::memcpy(value, r->app_props.data(), bytes);
  }
  return rc;
}

cl_int CL_API_CALL W_clReleaseCommandQueue(cl_command_queue q) {
  return ApiCall<cl_int>(k_clReleaseCommandQueue, [&] { return g_next->clReleaseCommandQueue(q); });
}

void QueueArg(cl_command_queue q) {
  if (QueueRec* r = FindQueue(q)) accel::ApiArg(g_key_queue, r->id);
}

cl_int CL_API_CALL W_clFlush(cl_command_queue q) {
  return ApiCall<cl_int>(k_clFlush, [&] {
    if (On()) QueueArg(q);
    return g_next->clFlush(q);
  });
}

cl_int CL_API_CALL W_clFinish(cl_command_queue q) {
  return ApiCall<cl_int>(k_clFinish, [&] {
    if (On()) QueueArg(q);
    return g_next->clFinish(q);
  });
}

cl_int CL_API_CALL W_clWaitForEvents(cl_uint n, const cl_event* evs) {
  return ApiCall<cl_int>(k_clWaitForEvents, [&] { return g_next->clWaitForEvents(n, evs); });
}

// --- wrappers: memory objects -------------------------------------------------------------------

cl_mem CL_API_CALL W_clCreateBuffer(cl_context ctx, cl_mem_flags flags, size_t size, void* host, cl_int* err) {
  cl_mem m = ApiCall<cl_mem>(k_clCreateBuffer, [&] {
    if (On()) accel::ApiArg(g_key_size, size);
    return g_next->clCreateBuffer(ctx, flags, size, host, err);
  });
  RecordAllocation(ctx, m, size);
  return m;
}

cl_mem CL_API_CALL W_clCreateBufferWithProperties(cl_context ctx, const cl_mem_properties* props, cl_mem_flags flags,
                                                  size_t size, void* host, cl_int* err) {
  cl_mem m = ApiCall<cl_mem>(k_clCreateBufferWithProperties, [&] {
    if (On()) accel::ApiArg(g_key_size, size);
    return g_next->clCreateBufferWithProperties(ctx, props, flags, size, host, err);
  });
  RecordAllocation(ctx, m, size);
  return m;
}

// Sub-buffers alias their parent's memory: an API call, not an allocation.
cl_mem CL_API_CALL W_clCreateSubBuffer(cl_mem parent, cl_mem_flags flags, cl_buffer_create_type type, const void* info,
                                       cl_int* err) {
  return ApiCall<cl_mem>(k_clCreateSubBuffer, [&] { return g_next->clCreateSubBuffer(parent, flags, type, info, err); });
}

uint64_t ImageAllocationBytes(cl_mem m) {
  size_t bytes = 0;
  if (!m || g_next->clGetMemObjectInfo(m, CL_MEM_SIZE, sizeof bytes, &bytes, nullptr) != CL_SUCCESS) return 0;
  return bytes;
}

cl_mem CL_API_CALL W_clCreateImage(cl_context ctx, cl_mem_flags flags, const cl_image_format* fmt,
                                   const cl_image_desc* desc, void* host, cl_int* err) {
  cl_mem m = ApiCall<cl_mem>(k_clCreateImage, [&] { return g_next->clCreateImage(ctx, flags, fmt, desc, host, err); });
  if (m && On()) RecordAllocation(ctx, m, ImageAllocationBytes(m));
  return m;
}

cl_mem CL_API_CALL W_clCreateImageWithProperties(cl_context ctx, const cl_mem_properties* props, cl_mem_flags flags,
                                                 const cl_image_format* fmt, const cl_image_desc* desc, void* host,
                                                 cl_int* err) {
  cl_mem m = ApiCall<cl_mem>(k_clCreateImageWithProperties, [&] {
    return g_next->clCreateImageWithProperties(ctx, props, flags, fmt, desc, host, err);
  });
  if (m && On()) RecordAllocation(ctx, m, ImageAllocationBytes(m));
  return m;
}

cl_int CL_API_CALL W_clRetainMemObject(cl_mem m) {
  cl_int rc = ApiCall<cl_int>(k_clRetainMemObject, [&] { return g_next->clRetainMemObject(m); });
  if (rc == CL_SUCCESS) RetainingMemObject(m);
  return rc;
}

cl_int CL_API_CALL W_clReleaseMemObject(cl_mem m) {
  ReleasingMemObject(m);
  return ApiCall<cl_int>(k_clReleaseMemObject, [&] { return g_next->clReleaseMemObject(m); });
}

void* CL_API_CALL W_clSVMAlloc(cl_context ctx, cl_svm_mem_flags flags, size_t size, cl_uint alignment) {
  void* p = ApiCall<void*>(k_clSVMAlloc, [&] {
    if (On()) accel::ApiArg(g_key_size, size);
    return g_next->clSVMAlloc(ctx, flags, size, alignment);
  });
  if (p && On()) {
    if (DeviceRec* d = ContextDevice(ctx)) {
      accel::EmitMemory(d->memory_stream, MonoNow(), 0, reinterpret_cast<uint64_t>(p), size, accel::MemoryOp::kAllocate,
                        MemoryKind::kManaged);
      std::lock_guard<std::mutex> lk(g_svm_mu);
      g_svm[p] = {d->memory_stream, size};
    }
  }
  return p;
}

void ForgetSvm(void* p) {
  std::pair<recorder::ExternalStream*, uint64_t> a{nullptr, 0};
  {
    std::lock_guard<std::mutex> lk(g_svm_mu);
    auto it = g_svm.find(p);
    if (it == g_svm.end()) return;
    a = it->second;
    g_svm.erase(it);
  }
  accel::EmitMemory(a.first, MonoNow(), 0, reinterpret_cast<uint64_t>(p), a.second, accel::MemoryOp::kFree,
                    MemoryKind::kManaged);
}

void CL_API_CALL W_clSVMFree(cl_context ctx, void* p) {
  if (!On()) return g_next->clSVMFree(ctx, p);
  ApiCall<int>(k_clSVMFree, [&] {
    g_next->clSVMFree(ctx, p);
    return 0;
  });
  if (p) ForgetSvm(p);
}

// --- wrappers: programs and kernels ---------------------------------------------------------------

cl_program CL_API_CALL W_clCreateProgramWithSource(cl_context ctx, cl_uint n, const char** src, const size_t* len,
                                                   cl_int* err) {
  return ApiCall<cl_program>(k_clCreateProgramWithSource,
                             [&] { return g_next->clCreateProgramWithSource(ctx, n, src, len, err); });
}

cl_program CL_API_CALL W_clCreateProgramWithBinary(cl_context ctx, cl_uint n, const cl_device_id* devs,
                                                   const size_t* len, const unsigned char** bins, cl_int* status,
                                                   cl_int* err) {
  return ApiCall<cl_program>(k_clCreateProgramWithBinary,
                             [&] { return g_next->clCreateProgramWithBinary(ctx, n, devs, len, bins, status, err); });
}

cl_program CL_API_CALL W_clCreateProgramWithIL(cl_context ctx, const void* il, size_t len, cl_int* err) {
  return ApiCall<cl_program>(k_clCreateProgramWithIL, [&] { return g_next->clCreateProgramWithIL(ctx, il, len, err); });
}

cl_int CL_API_CALL W_clBuildProgram(cl_program prog, cl_uint n, const cl_device_id* devs, const char* opts,
                                    void(CL_CALLBACK* notify)(cl_program, void*), void* user) {
  return ApiCall<cl_int>(k_clBuildProgram, [&] { return g_next->clBuildProgram(prog, n, devs, opts, notify, user); });
}

cl_int CL_API_CALL W_clCompileProgram(cl_program prog, cl_uint n, const cl_device_id* devs, const char* opts,
                                      cl_uint nh, const cl_program* headers, const char** names,
                                      void(CL_CALLBACK* notify)(cl_program, void*), void* user) {
  return ApiCall<cl_int>(k_clCompileProgram, [&] {
    return g_next->clCompileProgram(prog, n, devs, opts, nh, headers, names, notify, user);
  });
}

cl_program CL_API_CALL W_clLinkProgram(cl_context ctx, cl_uint n, const cl_device_id* devs, const char* opts,
                                       cl_uint np, const cl_program* progs, void(CL_CALLBACK* notify)(cl_program, void*),
                                       void* user, cl_int* err) {
  return ApiCall<cl_program>(k_clLinkProgram,
                             [&] { return g_next->clLinkProgram(ctx, n, devs, opts, np, progs, notify, user, err); });
}

cl_kernel CL_API_CALL W_clCreateKernel(cl_program prog, const char* name, cl_int* err) {
  cl_kernel k = ApiCall<cl_kernel>(k_clCreateKernel, [&] { return g_next->clCreateKernel(prog, name, err); });
  if (k && On()) RememberKernel(k);
  return k;
}

cl_int CL_API_CALL W_clCreateKernelsInProgram(cl_program prog, cl_uint n, cl_kernel* kernels, cl_uint* n_ret) {
  cl_int rc = ApiCall<cl_int>(k_clCreateKernelsInProgram,
                              [&] { return g_next->clCreateKernelsInProgram(prog, n, kernels, n_ret); });
  if (rc == CL_SUCCESS && kernels && On()) {
    cl_uint got = n;
    if (n_ret) got = std::min(n, *n_ret);
    for (cl_uint i = 0; i < got; ++i) RememberKernel(kernels[i]);
  }
  return rc;
}

cl_kernel CL_API_CALL W_clCloneKernel(cl_kernel src, cl_int* err) {
  cl_kernel k = ApiCall<cl_kernel>(k_clCloneKernel, [&] { return g_next->clCloneKernel(src, err); });
  if (k && On()) RememberKernel(k);
  return k;
}

// --- wrappers: enqueues --------------------------------------------------------------------------------

Pending KernelProto(cl_kernel k, cl_uint dim, const size_t* gws, const size_t* lws, uint32_t name) {
  Pending p;
  p.cmd = Cmd::kKernel;
  p.name = name ? name : (On() ? KernelName(k) : 0);
  for (cl_uint i = 0; i < 3; ++i) {
    uint64_t g = (gws && i < dim) ? gws[i] : 1;
    uint64_t l = (lws && i < dim) ? lws[i] : 0;
    if (lws) {
      // Work-groups per dimension (CUDA's grid), rounded up for non-uniform groups.
      p.grid[i] = static_cast<uint32_t>(l ? (g + l - 1) / l : g);
      p.block[i] = static_cast<uint32_t>(l ? l : 1);
    } else {
      // No local size: the driver picks the groups. The grid counts work-items
      // and the block stays 0 (unknown), as the schema documents.
      p.grid[i] = static_cast<uint32_t>(g);
    }
  }
  return p;
}

// The launch API event of a kernel command. The global size is grid x block
// (grid alone without a local size).
void EmitLaunch(const Pending& proto, uint64_t corr, const QueueRec* qr) {
  accel::LaunchArgs a;
  a.correlation = corr;
  a.kernel = proto.name;
  std::memcpy(a.grid, proto.grid, sizeof a.grid);
  std::memcpy(a.block, proto.block, sizeof a.block);
  if (qr) {
    a.device = qr->device->number;
    a.queue = qr->id;
  }
  accel::ApiLaunch(a);
}

cl_int CL_API_CALL W_clEnqueueNDRangeKernel(cl_command_queue q, cl_kernel k, cl_uint dim, const size_t* off,
                                            const size_t* gws, const size_t* lws, cl_uint nw, const cl_event* wl,
                                            cl_event* ev) {
  if (!On()) return g_next->clEnqueueNDRangeKernel(q, k, dim, off, gws, lws, nw, wl, ev);
  Pending proto = KernelProto(k, dim, gws, lws, 0);
  return Enqueue(
      k_clEnqueueNDRangeKernel, q, ev, proto,
      [&](uint64_t corr, QueueRec* qr) { EmitLaunch(proto, corr, qr); },
      [&](cl_event* e) { return g_next->clEnqueueNDRangeKernel(q, k, dim, off, gws, lws, nw, wl, e); });
}

cl_int CL_API_CALL W_clEnqueueTask(cl_command_queue q, cl_kernel k, cl_uint nw, const cl_event* wl, cl_event* ev) {
  if (!On()) return g_next->clEnqueueTask(q, k, nw, wl, ev);
  size_t one = 1;
  Pending proto = KernelProto(k, 1, &one, &one, 0);
  return Enqueue(
      k_clEnqueueTask, q, ev, proto,
      [&](uint64_t corr, QueueRec* qr) { EmitLaunch(proto, corr, qr); },
      [&](cl_event* e) { return g_next->clEnqueueTask(q, k, nw, wl, e); });
}

cl_int CL_API_CALL W_clEnqueueNativeKernel(cl_command_queue q, void(CL_CALLBACK* fn)(void*), void* args, size_t cb,
                                           cl_uint nm, const cl_mem* mems, const void** locs, cl_uint nw,
                                           const cl_event* wl, cl_event* ev) {
  return Enqueue(k_clEnqueueNativeKernel, q, ev, CommandProto(g_name_native, 0), NoArgs,
                 [&](cl_event* e) { return g_next->clEnqueueNativeKernel(q, fn, args, cb, nm, mems, locs, nw, wl, e); });
}

cl_int CL_API_CALL W_clEnqueueReadBuffer(cl_command_queue q, cl_mem b, cl_bool blk, size_t off, size_t sz, void* p,
                                         cl_uint nw, const cl_event* wl, cl_event* ev) {
  return Enqueue(k_clEnqueueReadBuffer, q, ev, CopyProto(CopyKind::kDtoH, sz, blk), BytesArg(sz, blk),
                 [&](cl_event* e) { return g_next->clEnqueueReadBuffer(q, b, blk, off, sz, p, nw, wl, e); });
}

cl_int CL_API_CALL W_clEnqueueWriteBuffer(cl_command_queue q, cl_mem b, cl_bool blk, size_t off, size_t sz,
                                          const void* p, cl_uint nw, const cl_event* wl, cl_event* ev) {
  return Enqueue(k_clEnqueueWriteBuffer, q, ev, CopyProto(CopyKind::kHtoD, sz, blk), BytesArg(sz, blk),
                 [&](cl_event* e) { return g_next->clEnqueueWriteBuffer(q, b, blk, off, sz, p, nw, wl, e); });
}

cl_int CL_API_CALL W_clEnqueueCopyBuffer(cl_command_queue q, cl_mem s, cl_mem d, size_t so, size_t dof, size_t sz,
                                         cl_uint nw, const cl_event* wl, cl_event* ev) {
  return Enqueue(k_clEnqueueCopyBuffer, q, ev, CopyProto(CopyKind::kDtoD, sz, false), BytesArg(sz),
                 [&](cl_event* e) { return g_next->clEnqueueCopyBuffer(q, s, d, so, dof, sz, nw, wl, e); });
}

cl_int CL_API_CALL W_clEnqueueReadBufferRect(cl_command_queue q, cl_mem b, cl_bool blk, const size_t* bo,
                                             const size_t* ho, const size_t* region, size_t brp, size_t bsp,
                                             size_t hrp, size_t hsp, void* p, cl_uint nw, const cl_event* wl,
                                             cl_event* ev) {
  uint64_t bytes = Volume(region);  // region[0] is in bytes for buffer rects
  return Enqueue(k_clEnqueueReadBufferRect, q, ev, CopyProto(CopyKind::kDtoH, bytes, blk), BytesArg(bytes, blk),
                 [&](cl_event* e) {
                   return g_next->clEnqueueReadBufferRect(q, b, blk, bo, ho, region, brp, bsp, hrp, hsp, p, nw, wl, e);
                 });
}

cl_int CL_API_CALL W_clEnqueueWriteBufferRect(cl_command_queue q, cl_mem b, cl_bool blk, const size_t* bo,
                                              const size_t* ho, const size_t* region, size_t brp, size_t bsp,
                                              size_t hrp, size_t hsp, const void* p, cl_uint nw, const cl_event* wl,
                                              cl_event* ev) {
  uint64_t bytes = Volume(region);
  return Enqueue(k_clEnqueueWriteBufferRect, q, ev, CopyProto(CopyKind::kHtoD, bytes, blk), BytesArg(bytes, blk),
                 [&](cl_event* e) {
                   return g_next->clEnqueueWriteBufferRect(q, b, blk, bo, ho, region, brp, bsp, hrp, hsp, p, nw, wl, e);
                 });
}

cl_int CL_API_CALL W_clEnqueueCopyBufferRect(cl_command_queue q, cl_mem s, cl_mem d, const size_t* so,
                                             const size_t* dof, const size_t* region, size_t srp, size_t ssp,
                                             size_t drp, size_t dsp, cl_uint nw, const cl_event* wl, cl_event* ev) {
  uint64_t bytes = Volume(region);
  return Enqueue(k_clEnqueueCopyBufferRect, q, ev, CopyProto(CopyKind::kDtoD, bytes, false), BytesArg(bytes),
                 [&](cl_event* e) {
                   return g_next->clEnqueueCopyBufferRect(q, s, d, so, dof, region, srp, ssp, drp, dsp, nw, wl, e);
                 });
}

cl_int CL_API_CALL W_clEnqueueFillBuffer(cl_command_queue q, cl_mem b, const void* pat, size_t ps, size_t off,
                                         size_t sz, cl_uint nw, const cl_event* wl, cl_event* ev) {
  Pending proto;
  proto.cmd = Cmd::kFill;
  proto.bytes = sz;
  return Enqueue(k_clEnqueueFillBuffer, q, ev, proto, BytesArg(sz),
                 [&](cl_event* e) { return g_next->clEnqueueFillBuffer(q, b, pat, ps, off, sz, nw, wl, e); });
}

cl_int CL_API_CALL W_clEnqueueReadImage(cl_command_queue q, cl_mem img, cl_bool blk, const size_t* origin,
                                        const size_t* region, size_t rp, size_t sp, void* p, cl_uint nw,
                                        const cl_event* wl, cl_event* ev) {
  uint64_t bytes = On() ? ImageBytes(img, region) : 0;
  return Enqueue(k_clEnqueueReadImage, q, ev, CopyProto(CopyKind::kDtoH, bytes, blk), BytesArg(bytes, blk),
                 [&](cl_event* e) { return g_next->clEnqueueReadImage(q, img, blk, origin, region, rp, sp, p, nw, wl, e); });
}

cl_int CL_API_CALL W_clEnqueueWriteImage(cl_command_queue q, cl_mem img, cl_bool blk, const size_t* origin,
                                         const size_t* region, size_t rp, size_t sp, const void* p, cl_uint nw,
                                         const cl_event* wl, cl_event* ev) {
  uint64_t bytes = On() ? ImageBytes(img, region) : 0;
  return Enqueue(k_clEnqueueWriteImage, q, ev, CopyProto(CopyKind::kHtoD, bytes, blk), BytesArg(bytes, blk),
                 [&](cl_event* e) { return g_next->clEnqueueWriteImage(q, img, blk, origin, region, rp, sp, p, nw, wl, e); });
}

cl_int CL_API_CALL W_clEnqueueCopyImage(cl_command_queue q, cl_mem s, cl_mem d, const size_t* so, const size_t* dof,
                                        const size_t* region, cl_uint nw, const cl_event* wl, cl_event* ev) {
  uint64_t bytes = On() ? ImageBytes(s, region) : 0;
  return Enqueue(k_clEnqueueCopyImage, q, ev, CopyProto(CopyKind::kDtoD, bytes, false), BytesArg(bytes),
                 [&](cl_event* e) { return g_next->clEnqueueCopyImage(q, s, d, so, dof, region, nw, wl, e); });
}

cl_int CL_API_CALL W_clEnqueueFillImage(cl_command_queue q, cl_mem img, const void* color, const size_t* origin,
                                        const size_t* region, cl_uint nw, const cl_event* wl, cl_event* ev) {
  Pending proto;
  proto.cmd = Cmd::kFill;
  proto.bytes = On() ? ImageBytes(img, region) : 0;
  return Enqueue(k_clEnqueueFillImage, q, ev, proto, BytesArg(proto.bytes),
                 [&](cl_event* e) { return g_next->clEnqueueFillImage(q, img, color, origin, region, nw, wl, e); });
}

cl_int CL_API_CALL W_clEnqueueCopyImageToBuffer(cl_command_queue q, cl_mem s, cl_mem d, const size_t* so,
                                                const size_t* region, size_t dof, cl_uint nw, const cl_event* wl,
                                                cl_event* ev) {
  uint64_t bytes = On() ? ImageBytes(s, region) : 0;
  return Enqueue(k_clEnqueueCopyImageToBuffer, q, ev, CopyProto(CopyKind::kDtoD, bytes, false), BytesArg(bytes),
                 [&](cl_event* e) { return g_next->clEnqueueCopyImageToBuffer(q, s, d, so, region, dof, nw, wl, e); });
}

cl_int CL_API_CALL W_clEnqueueCopyBufferToImage(cl_command_queue q, cl_mem s, cl_mem d, size_t so, const size_t* dof,
                                                const size_t* region, cl_uint nw, const cl_event* wl, cl_event* ev) {
  uint64_t bytes = On() ? ImageBytes(d, region) : 0;
  return Enqueue(k_clEnqueueCopyBufferToImage, q, ev, CopyProto(CopyKind::kDtoD, bytes, false), BytesArg(bytes),
                 [&](cl_event* e) { return g_next->clEnqueueCopyBufferToImage(q, s, d, so, dof, region, nw, wl, e); });
}

void RememberMapping(void* p, uint64_t bytes) {
  if (!p) return;
  std::lock_guard<std::mutex> lk(g_map_mu);
  g_mapped[p] = bytes;
}

uint64_t ForgetMapping(void* p) {
  std::lock_guard<std::mutex> lk(g_map_mu);
  auto it = g_mapped.find(p);
  if (it == g_mapped.end()) return 0;
  uint64_t b = it->second;
  g_mapped.erase(it);
  return b;
}

void* CL_API_CALL W_clEnqueueMapBuffer(cl_command_queue q, cl_mem b, cl_bool blk, cl_map_flags flags, size_t off,
                                       size_t sz, cl_uint nw, const cl_event* wl, cl_event* ev, cl_int* err) {
  if (!On()) return g_next->clEnqueueMapBuffer(q, b, blk, flags, off, sz, nw, wl, ev, err);
  void* mapped = nullptr;
  cl_int rc = Enqueue(k_clEnqueueMapBuffer, q, ev, CommandProto(g_name_map, sz), BytesArg(sz, blk), [&](cl_event* e) {
    cl_int local = CL_SUCCESS;
    mapped = g_next->clEnqueueMapBuffer(q, b, blk, flags, off, sz, nw, wl, e, &local);
    return local;
  });
  if (err) *err = rc;
  if (rc == CL_SUCCESS) RememberMapping(mapped, sz);
  return mapped;
}

void* CL_API_CALL W_clEnqueueMapImage(cl_command_queue q, cl_mem img, cl_bool blk, cl_map_flags flags,
                                      const size_t* origin, const size_t* region, size_t* rp, size_t* sp, cl_uint nw,
                                      const cl_event* wl, cl_event* ev, cl_int* err) {
  if (!On()) return g_next->clEnqueueMapImage(q, img, blk, flags, origin, region, rp, sp, nw, wl, ev, err);
  uint64_t bytes = ImageBytes(img, region);
  void* mapped = nullptr;
  cl_int rc = Enqueue(k_clEnqueueMapImage, q, ev, CommandProto(g_name_map, bytes), BytesArg(bytes, blk), [&](cl_event* e) {
    cl_int local = CL_SUCCESS;
    mapped = g_next->clEnqueueMapImage(q, img, blk, flags, origin, region, rp, sp, nw, wl, e, &local);
    return local;
  });
  if (err) *err = rc;
  if (rc == CL_SUCCESS) RememberMapping(mapped, bytes);
  return mapped;
}

cl_int CL_API_CALL W_clEnqueueUnmapMemObject(cl_command_queue q, cl_mem m, void* p, cl_uint nw, const cl_event* wl,
                                             cl_event* ev) {
  uint64_t bytes = On() ? ForgetMapping(p) : 0;
  return Enqueue(k_clEnqueueUnmapMemObject, q, ev, CommandProto(g_name_unmap, bytes), BytesArg(bytes),
                 [&](cl_event* e) { return g_next->clEnqueueUnmapMemObject(q, m, p, nw, wl, e); });
}

cl_int CL_API_CALL W_clEnqueueMigrateMemObjects(cl_command_queue q, cl_uint n, const cl_mem* mems,
                                                cl_mem_migration_flags flags, cl_uint nw, const cl_event* wl,
                                                cl_event* ev) {
  uint64_t bytes = 0;
  for (cl_uint i = 0; On() && mems && i < n; ++i) bytes += ImageAllocationBytes(mems[i]);
  return Enqueue(k_clEnqueueMigrateMemObjects, q, ev, CommandProto(g_name_migrate, bytes), BytesArg(bytes),
                 [&](cl_event* e) { return g_next->clEnqueueMigrateMemObjects(q, n, mems, flags, nw, wl, e); });
}

cl_int CL_API_CALL W_clEnqueueMarker(cl_command_queue q, cl_event* ev) {
  return Enqueue(k_clEnqueueMarker, q, ev, SyncProto(SyncType::kMarker), NoArgs,
                 [&](cl_event* e) { return g_next->clEnqueueMarker(q, e); });
}

cl_int CL_API_CALL W_clEnqueueMarkerWithWaitList(cl_command_queue q, cl_uint nw, const cl_event* wl, cl_event* ev) {
  return Enqueue(k_clEnqueueMarkerWithWaitList, q, ev, SyncProto(SyncType::kMarker), NoArgs,
                 [&](cl_event* e) { return g_next->clEnqueueMarkerWithWaitList(q, nw, wl, e); });
}

// The 1.0 barrier has no event: timed as the equivalent 1.2 barrier when the
// driver has one.
cl_int CL_API_CALL W_clEnqueueBarrier(cl_command_queue q) {
  if (!On() || !g_next->clEnqueueBarrierWithWaitList) {
    return ApiCall<cl_int>(k_clEnqueueBarrier, [&] { return g_next->clEnqueueBarrier(q); });
  }
  return Enqueue(k_clEnqueueBarrier, q, nullptr, SyncProto(SyncType::kBarrier), NoArgs,
                 [&](cl_event* e) { return g_next->clEnqueueBarrierWithWaitList(q, 0, nullptr, e); });
}

cl_int CL_API_CALL W_clEnqueueBarrierWithWaitList(cl_command_queue q, cl_uint nw, const cl_event* wl, cl_event* ev) {
  return Enqueue(k_clEnqueueBarrierWithWaitList, q, ev, SyncProto(SyncType::kBarrier), NoArgs,
                 [&](cl_event* e) { return g_next->clEnqueueBarrierWithWaitList(q, nw, wl, e); });
}

// No event and no exact 1.2 equivalent (a barrier would also wait for earlier
// commands of an out-of-order queue): the API call only.
cl_int CL_API_CALL W_clEnqueueWaitForEvents(cl_command_queue q, cl_uint n, const cl_event* evs) {
  return ApiCall<cl_int>(k_clEnqueueWaitForEvents, [&] { return g_next->clEnqueueWaitForEvents(q, n, evs); });
}

cl_int CL_API_CALL W_clEnqueueSVMFree(cl_command_queue q, cl_uint n, void* ptrs[],
                                      void(CL_CALLBACK* fn)(cl_command_queue, cl_uint, void*[], void*), void* user,
                                      cl_uint nw, const cl_event* wl, cl_event* ev) {
  cl_int rc = Enqueue(k_clEnqueueSVMFree, q, ev, CommandProto(g_name_svm_free, 0), NoArgs,
                      [&](cl_event* e) { return g_next->clEnqueueSVMFree(q, n, ptrs, fn, user, nw, wl, e); });
  if (rc == CL_SUCCESS && On())
    for (cl_uint i = 0; ptrs && i < n; ++i) ForgetSvm(ptrs[i]);
  return rc;
}

cl_int CL_API_CALL W_clEnqueueSVMMemcpy(cl_command_queue q, cl_bool blk, void* dst, const void* src, size_t sz,
                                        cl_uint nw, const cl_event* wl, cl_event* ev) {
  return Enqueue(k_clEnqueueSVMMemcpy, q, ev, CopyProto(CopyKind::kUnknown, sz, blk), BytesArg(sz, blk),
                 [&](cl_event* e) { return g_next->clEnqueueSVMMemcpy(q, blk, dst, src, sz, nw, wl, e); });
}

cl_int CL_API_CALL W_clEnqueueSVMMemFill(cl_command_queue q, void* p, const void* pat, size_t ps, size_t sz, cl_uint nw,
                                         const cl_event* wl, cl_event* ev) {
  Pending proto;
  proto.cmd = Cmd::kFill;
  proto.bytes = sz;
  return Enqueue(k_clEnqueueSVMMemFill, q, ev, proto, BytesArg(sz),
                 [&](cl_event* e) { return g_next->clEnqueueSVMMemFill(q, p, pat, ps, sz, nw, wl, e); });
}

cl_int CL_API_CALL W_clEnqueueSVMMap(cl_command_queue q, cl_bool blk, cl_map_flags flags, void* p, size_t sz,
                                     cl_uint nw, const cl_event* wl, cl_event* ev) {
  if (On()) RememberMapping(p, sz);
  return Enqueue(k_clEnqueueSVMMap, q, ev, CommandProto(g_name_map, sz), BytesArg(sz, blk),
                 [&](cl_event* e) { return g_next->clEnqueueSVMMap(q, blk, flags, p, sz, nw, wl, e); });
}

cl_int CL_API_CALL W_clEnqueueSVMUnmap(cl_command_queue q, void* p, cl_uint nw, const cl_event* wl, cl_event* ev) {
  uint64_t bytes = On() ? ForgetMapping(p) : 0;
  return Enqueue(k_clEnqueueSVMUnmap, q, ev, CommandProto(g_name_unmap, bytes), BytesArg(bytes),
                 [&](cl_event* e) { return g_next->clEnqueueSVMUnmap(q, p, nw, wl, e); });
}

cl_int CL_API_CALL W_clEnqueueSVMMigrateMem(cl_command_queue q, cl_uint n, const void** ptrs, const size_t* sizes,
                                            cl_mem_migration_flags flags, cl_uint nw, const cl_event* wl,
                                            cl_event* ev) {
  uint64_t bytes = 0;
  for (cl_uint i = 0; sizes && i < n; ++i) bytes += sizes[i];
  return Enqueue(k_clEnqueueSVMMigrateMem, q, ev, CommandProto(g_name_migrate, bytes), BytesArg(bytes),
                 [&](cl_event* e) { return g_next->clEnqueueSVMMigrateMem(q, n, ptrs, sizes, flags, nw, wl, e); });
}

// --- lifecycle --------------------------------------------------------------------------------------

void OnForkChild() { g_on.store(false, std::memory_order_relaxed); }

// Runs before libstrata's own exit flush (registered later, so it runs first):
// gives completion callbacks still running on the driver's threads a moment,
// then says what was recorded and what was not.
void AtExit() {
  if (!On()) return;
  // Bounded: a command the program never waited for may still be running.
  for (int i = 0; i < 1000 && g_stats.InFlight() > 0; ++i) ::usleep(1000);
  LayerStats s = Stats();
  std::string detail = std::to_string(s.completed) + " of " + std::to_string(s.commands) +
                       " enqueued commands recorded with device times (ICD-loader layer";
  detail += s.forced_queues ? "; profiling switched on for " + std::to_string(s.forced_queues) + " queues)" : ")";
  if (uint64_t out = g_stats.outside_windows.load()) {
    const format::ControlBlock* cb = recorder::Control();
    detail += "; device activity " +
              std::string(cb ? format::CudaActivityName(static_cast<format::CudaActivity>(cb->cuda_activity.load()))
                             : "all") +
              ": " + std::to_string(out) + " more enqueued outside the steps asked for (API calls only)";
  }
  bool partial = false;
  if (s.in_flight) {
    detail += "; " + std::to_string(s.in_flight) + " still running at exit (not recorded)";
    partial = true;
  }
  if (s.unprofiled) {
    detail += "; " + std::to_string(s.unprofiled) + " without profiling information";
    partial = true;
  }
  if (s.aborted) {
    detail += "; " + std::to_string(s.aborted) + " aborted";
    partial = true;
  }
  if (s.untracked) {
    detail += "; " + std::to_string(s.untracked) + " could not be tracked";
    partial = true;
  }
  if (g_stats.unaligned_devices.load()) {
    detail += "; a device clock matched no host clock (aligned at its first command's completion)";
    partial = true;
  }
  recorder::ReportCollectorStatus("opencl", partial ? "partial" : "ok", detail);
}

bool InitLayer(const cl_icd_dispatch* target) {
  g_next = target;
  std::memset(&g_table, 0, sizeof g_table);
  if (!recorder::Active()) return true;  // loaded outside `strata record`: pass everything through
  for (uint32_t i = 0; i < kApiCount; ++i) g_api_name[i] = recorder::Intern(kApiNames[i]);
  g_key_bytes = recorder::Intern("bytes");
  g_key_size = recorder::Intern("size");
  g_key_blocking = recorder::Intern("blocking");
  g_key_queue = recorder::Intern("queue");
  g_name_map = recorder::Intern("Map");
  g_name_unmap = recorder::Intern("Unmap");
  g_name_migrate = recorder::Intern("Migrate");
  g_name_native = recorder::Intern("Native kernel");
  g_name_svm_free = recorder::Intern("SVM free");
  g_raw_clock = new accel::ClockMapper(CLOCK_MONOTONIC_RAW);
  g_boot_clock = new accel::ClockMapper(CLOCK_BOOTTIME);
  g_real_clock = new accel::ClockMapper(CLOCK_REALTIME);
  g_pool = new PendingPool();
#define STRATA_CL_WRAP(n) g_table.n = W_##n;
  STRATA_CL_APIS(STRATA_CL_WRAP)
#undef STRATA_CL_WRAP
  g_table.clGetCommandQueueInfo = W_clGetCommandQueueInfo;
  pthread_atfork(nullptr, nullptr, OnForkChild);
  std::atexit(AtExit);
  g_on.store(true, std::memory_order_release);
  return true;
}

}  // namespace

LayerStats Stats() {
  LayerStats s;
  s.commands = g_stats.commands.load();
  s.completed = g_stats.completed.load();
  s.aborted = g_stats.aborted.load();
  s.unprofiled = g_stats.unprofiled.load() + g_stats.unprofiled_queues.load();
  s.untracked = g_stats.untracked.load();
  s.in_flight = g_stats.InFlight();
  s.forced_queues = g_stats.forced_queues.load();
  return s;
}

}  // namespace strata::opencl

extern "C" {

__attribute__((visibility("default"))) CL_API_ENTRY cl_int CL_API_CALL clGetLayerInfo(cl_layer_info param, size_t size,
                                                                                       void* value, size_t* size_ret) {
  switch (param) {
    case CL_LAYER_API_VERSION: {
      cl_layer_api_version v = CL_LAYER_API_VERSION_100;
      if (size_ret) *size_ret = sizeof v;
      if (value) {
        if (size < sizeof v) return CL_INVALID_VALUE;
        std::memcpy(value, &v, sizeof v);
      }
      return CL_SUCCESS;
    }
    case CL_LAYER_NAME: {
      static const char kName[] = "strata";
      if (size_ret) *size_ret = sizeof kName;
      if (value) {
        if (size < sizeof kName) return CL_INVALID_VALUE;
        std::memcpy(value, kName, sizeof kName);
      }
      return CL_SUCCESS;
    }
    default: return CL_INVALID_VALUE;
  }
}

__attribute__((visibility("default"))) CL_API_ENTRY cl_int CL_API_CALL clInitLayer(cl_uint num_entries,
                                                                                    const cl_icd_dispatch* target,
                                                                                    cl_uint* num_entries_ret,
                                                                                    const cl_icd_dispatch** layer_dispatch_ret) {
  constexpr cl_uint kOurs = sizeof(cl_icd_dispatch) / sizeof(void*);
  if (!target || !num_entries_ret || !layer_dispatch_ret) return CL_INVALID_VALUE;
  if (num_entries < kOurs) {
    // An older loader with a shorter table: we would read past its end.
    strata::recorder::ReportCollectorStatus(
        "opencl", "unavailable",
        "the ICD loader's dispatch table has " + std::to_string(num_entries) + " entries, strata needs " +
            std::to_string(kOurs) + " (loader too old); OpenCL not recorded");
    return CL_INVALID_VALUE;
  }
  static std::once_flag once;
  std::call_once(once, [target] { strata::opencl::InitLayer(target); });
  *num_entries_ret = kOurs;
  *layer_dispatch_ret = &strata::opencl::layer::g_table;
  return CL_SUCCESS;
}

}  // extern "C"

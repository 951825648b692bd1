// SGEMMs through CLBlast on the first OpenCL device, run unmodified under
// `strata record` by the OpenCL tests. For each size it checks C against a CPU
// reference and prints the launch CLBlast's direct GEMM kernel must have, from
// CLBlast's own tuning parameters (RetrieveParameters) and the formula in its
// Xgemm::GemmDirect:
//   global = {Ceil(m, WGD) * MDIMCD / WGD, Ceil(n, WGD) * NDIMCD / WGD}, local = {MDIMCD, NDIMCD}
//
//   clblast_gemm SIZE...     -> one "gemm m=.. n=.. k=.. global=AxB local=CxD bytes=.." line per size
#define CL_TARGET_OPENCL_VERSION 300
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include <clblast.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

size_t Ceil(size_t x, size_t m) { return (x + m - 1) / m * m; }

}  // namespace

int main(int argc, char** argv) {
  std::vector<size_t> sizes;
  for (int i = 1; i < argc; ++i) sizes.push_back(static_cast<size_t>(std::atol(argv[i])));
  if (sizes.empty()) sizes = {64, 128};
  cl_platform_id platform;
  cl_device_id device;
  cl_int err;
  if (clGetPlatformIDs(1, &platform, nullptr) != CL_SUCCESS ||
      clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, nullptr) != CL_SUCCESS) {
    std::fprintf(stderr, "clblast_gemm: no OpenCL device\n");
    return 2;
  }
  cl_context ctx = clCreateContext(nullptr, 1, &device, nullptr, nullptr, &err);
  cl_command_queue queue = clCreateCommandQueue(ctx, device, 0, &err);
  std::unordered_map<std::string, size_t> params;
  if (clblast::RetrieveParameters(device, "XgemmDirect", clblast::Precision::kSingle, params) !=
      clblast::StatusCode::kSuccess) {
    std::fprintf(stderr, "clblast_gemm: cannot retrieve CLBlast's XgemmDirect parameters\n");
    return 1;
  }
  const size_t wgd = params["WGD"], mdimcd = params["MDIMCD"], ndimcd = params["NDIMCD"];
  for (size_t s : sizes) {
    const size_t m = s, n = s, k = s;
    std::vector<float> a(m * k), b(k * n), c(m * n, 0.0f), ref(m * n, 0.0f);
    for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>((i * 7) % 13) / 13.0f;
    for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>((i * 5) % 11) / 11.0f;
    for (size_t i = 0; i < m; ++i)
      for (size_t j = 0; j < n; ++j) {
        float acc = 0;
        for (size_t p = 0; p < k; ++p) acc += a[i * k + p] * b[p * n + j];
        ref[i * n + j] = acc;
      }
    cl_mem da = clCreateBuffer(ctx, CL_MEM_READ_ONLY, a.size() * 4, nullptr, &err);
    cl_mem db = clCreateBuffer(ctx, CL_MEM_READ_ONLY, b.size() * 4, nullptr, &err);
    cl_mem dc = clCreateBuffer(ctx, CL_MEM_READ_WRITE, c.size() * 4, nullptr, &err);
    clEnqueueWriteBuffer(queue, da, CL_TRUE, 0, a.size() * 4, a.data(), 0, nullptr, nullptr);
    clEnqueueWriteBuffer(queue, db, CL_TRUE, 0, b.size() * 4, b.data(), 0, nullptr, nullptr);
    cl_event ev = nullptr;
    auto st = clblast::Gemm(clblast::Layout::kRowMajor, clblast::Transpose::kNo, clblast::Transpose::kNo, m, n, k,
                            1.0f, da, 0, k, db, 0, n, 0.0f, dc, 0, n, &queue, &ev);
    if (st != clblast::StatusCode::kSuccess) {
      std::fprintf(stderr, "clblast_gemm: Gemm(%zu) -> %d\n", s, static_cast<int>(st));
      return 1;
    }
    clWaitForEvents(1, &ev);
    clReleaseEvent(ev);
    clEnqueueReadBuffer(queue, dc, CL_TRUE, 0, c.size() * 4, c.data(), 0, nullptr, nullptr);
    double worst = 0;
    for (size_t i = 0; i < c.size(); ++i) worst = std::fmax(worst, std::fabs(c[i] - ref[i]));
    if (worst > 1e-3 * static_cast<double>(k)) {
      std::fprintf(stderr, "clblast_gemm: %zu^3 max error %g\n", s, worst);
      return 1;
    }
    // Row-major: CLBlast computes C^T = B^T A^T, so its m is our n (equal here).
    std::printf("gemm m=%zu n=%zu k=%zu global=%zux%zu local=%zux%zu bytes_in=%zu bytes_out=%zu\n", m, n, k,
                Ceil(n, wgd) * mdimcd / wgd, Ceil(m, wgd) * ndimcd / wgd, mdimcd, ndimcd, (a.size() + b.size()) * 4,
                c.size() * 4);
    clReleaseMemObject(da);
    clReleaseMemObject(db);
    clReleaseMemObject(dc);
  }
  clReleaseCommandQueue(queue);
  clReleaseContext(ctx);
  return 0;
}

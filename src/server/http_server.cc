#include "server/http_server.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <mutex>

#include <fmt/format.h>

#include "base/error.h"
#include "base/files.h"
#include "server/http_backend.h"

namespace strata::server {

// The UI's files (generated from src/server/ui/ by CMake).
extern const char kUiIndexHtml[];
extern const char kUiAppJs[];
extern const char kUiViewsJs[];
extern const char kUiStyleCss[];

namespace {

bool Exists(const std::string& p) { return ::access(p.c_str(), R_OK) == 0; }

// libstrata_http.so: where STRATA_LIB_DIR says, else beside the binary's
// libraries (PREFIX/lib in a build tree, PREFIX/lib/strata installed).
std::string ModulePath() {
  const char* name = "libstrata_http.so";
  if (const char* d = ::secure_getenv("STRATA_LIB_DIR"); d && *d) {
    std::string p = fmt::format("{}/{}", d, name);
    if (Exists(p)) return p;
  }
  std::string exe = SelfExePath();
  std::string bin = exe.substr(0, exe.rfind('/'));
  std::string prefix = bin.substr(0, bin.rfind('/'));
  for (const std::string& dir : {prefix + "/lib", prefix + "/lib/strata", bin})
    if (Exists(dir + "/" + name)) return dir + "/" + name;
  return prefix + "/lib/strata/" + name;
}

// The module's entry point, loaded once (never unloaded); null with `*why`.
StrataHttpCreate LoadModule(std::string* why) {
  static std::once_flag once;
  static StrataHttpCreate create = nullptr;
  static std::string error;
  std::call_once(once, [] {
    std::string path = ModulePath();
    void* h = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (h == nullptr) {
      const char* e = ::dlerror();
      error = fmt::format("cannot load the HTTP server module ({}; set STRATA_LIB_DIR to its directory)",
                          e ? e : path);
      return;
    }
    create = reinterpret_cast<StrataHttpCreate>(::dlsym(h, kStrataHttpEntry));
    if (create == nullptr) error = fmt::format("{} has no {} (a module of another strata build?)", path, kStrataHttpEntry);
  });
  if (create == nullptr) *why = error;
  return create;
}

}  // namespace

std::string RandomToken() {
  unsigned char b[16] = {};
  int fd = ::open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    size_t got = 0;
    while (got < sizeof b) {
      ssize_t n = ::read(fd, b + got, sizeof b - got);
      if (n <= 0) break;
      got += static_cast<size_t>(n);
    }
    ::close(fd);
  }
  std::string s;
  for (unsigned char c : b) s += fmt::format("{:02x}", c);
  return s;
}

struct HttpServer::Impl {
  Api& api;
  ServerOptions opt;
  std::unique_ptr<HttpBackend> backend;  // from the module, on the first Bind

  Impl(Api& a, ServerOptions o) : api(a), opt(std::move(o)) {}
};

HttpServer::HttpServer(Api& api, ServerOptions opt) : impl_(std::make_unique<Impl>(api, std::move(opt))) {}

HttpServer::~HttpServer() = default;

StatusOr<int> HttpServer::Bind() {
  if (!impl_->backend) {
    std::string why;
    StrataHttpCreate create = LoadModule(&why);
    if (create == nullptr) return Err(StatusCode::kUnavailable, "{}", why);
    HttpBackendConfig cfg;
    cfg.host = impl_->opt.host;
    cfg.token = impl_->opt.token;
    cfg.index_html = kUiIndexHtml;
    cfg.app_js = kUiAppJs;
    cfg.views_js = kUiViewsJs;
    cfg.style_css = kUiStyleCss;
    Api* api = &impl_->api;
    cfg.handle = [api](const std::string& method, const std::string& path,
                       const std::multimap<std::string, std::string>& params,
                       const std::string& body) { return api->Handle(method, path, params, body); };
    impl_->backend.reset(create(&cfg));
    if (!impl_->backend) return Err(StatusCode::kInternal, "the HTTP server module could not start");
  }
  std::string error;
  int port = impl_->backend->Bind(impl_->opt.port, &error);
  if (port < 0) return Err(StatusCode::kUnavailable, "{}", error);
  return port;
}

void HttpServer::Run() {
  if (impl_->backend) impl_->backend->Run();
}

void HttpServer::Stop() {
  if (impl_->backend) impl_->backend->Stop();
}

}  // namespace strata::server

// Seed source for fuzz_elf_symbols: C and C++ functions (mangled names, a
// template, a lambda), data symbols with the names the Python reader looks for.
#include <cstdio>
#include <vector>
extern "C" { int _PyRuntime[4]; unsigned Py_Version = 0x030b04f0; }
namespace ns { template <typename T> struct Box { T v; T get() const { return v; } }; }
__attribute__((noinline)) static int helper(int x) { return x * 3; }
__attribute__((noinline)) int ns_call(ns::Box<long> b) { return static_cast<int>(b.get()); }
extern "C" __attribute__((noinline)) int c_function(int a) { return helper(a) + 1; }
int main(int argc, char**) {
  std::vector<int> v{argc, 2};
  auto f = [&](int y) { return y + v[0]; };
  std::printf("%d %d\n", f(c_function(argc)), ns_call({argc}));
  return _PyRuntime[0] + static_cast<int>(Py_Version & 1);
}

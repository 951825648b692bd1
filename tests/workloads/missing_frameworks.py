"""A program that checks for frameworks it may not have, the way libraries do
(importlib.util.find_spec, try/except ImportError), then does plain work."""
import importlib.util

have = {name: importlib.util.find_spec(name) is not None for name in ("tensorflow", "jax")}
try:
    import jax  # noqa: F401
except ImportError:
    pass
total = 0
for i in range(300000):
    total += i * i
print("have", have, "total", total)

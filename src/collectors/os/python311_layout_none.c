// Built when python3.11-dev's internal headers are absent: no Python frames.
#include "collectors/os/python_layout.h"

const struct StrataPyLayout* StrataPython311Layout(void) { return 0; }

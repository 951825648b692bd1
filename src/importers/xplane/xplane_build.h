// The XSpace importer's builder (xplane_importer.cc), for its entry points
// (xplane_load.cc).
#pragma once

#include <string>
#include <string_view>

#include "base/status.h"
#include "importers/xplane/xplane.h"
#include "model/trace.h"

namespace strata::importers::xplane {

// Builds the model of the XSpace in `bytes` (xplane.h says what goes where)
// into `t`, or adds it to `t` when `merge` is set. Malformed bytes are an error
// naming `what`; so is every error of a trace of its own (no merge). mapped:
// the bytes are a read-only file mapping, whose pages the builder gives back
// as it reads them.
Status Build(model::Trace& t, std::string_view bytes, const std::string& what, const XSpaceMerge* merge, bool mapped);

}  // namespace strata::importers::xplane

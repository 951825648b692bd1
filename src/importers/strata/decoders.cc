// Every level's decoders, registered explicitly (static libraries would drop
// self-registering objects). One line per level.
#include "importers/strata/decoder.h"

namespace strata::importers::strata_ctf {

void RegisterAllDecoders(DecoderRegistry& r) {
  RegisterCoreDecoders(r);
  RegisterAccelDecoders(r);
  RegisterOsDecoders(r);
  RegisterTorchDecoders(r);
  RegisterCommDecoders(r);
}

}  // namespace strata::importers::strata_ctf

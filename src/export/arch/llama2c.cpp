// llama2.c legacy checkpoints: a Llama with interleaved-pair rope; its run.c weight blocks map
// onto the Llama tensor names (see src/export/import/llama2c_checkpoint.cpp). No config.json.
#include "export/arch/registry.h"

namespace kestrel::exporter::arch {

const Architecture& llama2c() {
  static const Architecture kLlama2c = [] {
    Architecture a;
    a.name = "llama2c";
    return a;  // the Llama tensor names; nothing read from a config
  }();
  return kLlama2c;
}

}  // namespace kestrel::exporter::arch

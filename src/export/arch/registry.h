// The architecture entries, one per file in this folder; table.cpp lists them.
#pragma once

#include "kestrel/export/architecture.h"

namespace kestrel::exporter::arch {

const Architecture& llama();
const Architecture& mistral();
const Architecture& qwen2();
const Architecture& qwen3();
const Architecture& gemma3();
const Architecture& phi3();
const Architecture& smollm3();
const Architecture& llama2c();

}  // namespace kestrel::exporter::arch

#include "export/arch/registry.h"

namespace kestrel::exporter {

const std::vector<const Architecture*>& architectures() {
  static const std::vector<const Architecture*> kTable = {
      &arch::llama(), &arch::mistral(), &arch::qwen2(),   &arch::qwen3(),
      &arch::gemma3(), &arch::phi3(),   &arch::smollm3(), &arch::llama2c(),
  };
  return kTable;
}

const Architecture* find_architecture(const std::string& name) {
  for (const Architecture* a : architectures())
    if (a->name == name) return a;
  return nullptr;
}

const Architecture* find_architecture_by_model_type(const std::string& model_type) {
  for (const Architecture* a : architectures())
    for (const std::string& type : a->model_types)
      if (type == model_type) return a;
  return nullptr;
}

}  // namespace kestrel::exporter

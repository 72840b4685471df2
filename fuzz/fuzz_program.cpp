// The program loader with describe (kestrel inspect), the runtime's method loading and the
// hf_static v1 checks a runner makes before allocating anything.
#include <cstdint>

#include "kestrel/kernels/portable.h"
#include "kestrel/llm/hf_static_io_manager.h"
#include "kestrel/program/describe.h"
#include "kestrel/program/loaded_program.h"
#include "kestrel/runtime/backend.h"
#include "kestrel/runtime/method.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace kestrel;
  auto loaded = program::LoadedProgram::load_bytes(std::span<const uint8_t>(data, size));
  if (!loaded.ok()) return 0;
  (void)program::describe_program(**loaded);
  // No backends: a delegated method fails to load, by name.
  auto program = runtime::Program::from_loaded(*loaded, kernels::portable_kernel_registry(),
                                               std::make_shared<runtime::BackendRegistry>());
  if (!program.ok()) return 0;
  auto config = llm::parse_hf_static_metadata((*program)->metadata());
  for (const std::string& name : (*program)->method_names()) {
    auto method = (*program)->load_method(name);
    if (!method.ok() || !config.ok()) continue;
    if (name == config->prefill_method) (void)llm::validate_hf_static_method(**method, *config, config->prefill_step);
    if (name == config->decode_method) (void)llm::validate_hf_static_method(**method, *config, 1);
  }
  return 0;
}

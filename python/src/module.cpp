// The kestrel._kestrel extension module; kestrel/__init__.py is its public face.
#include "bindings.h"

PYBIND11_MODULE(_kestrel, module) {
  using namespace kestrel::python;
  module.doc() = "Kestrel: export Hugging Face checkpoints to static-shape programs and run them.";
  module.attr("__version__") = KESTREL_VERSION;
  register_errors(module);
  register_program(module);
  register_export(module);
  register_runner(module);
}

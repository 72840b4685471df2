#include "kestrel/backends/qnn/mem_registrar.h"

#include <mutex>

namespace kestrel::qnn {

namespace {
struct GlobalRegistrar {
  std::mutex mutex;
  std::shared_ptr<QnnMemRegistrar> registrar;
};
GlobalRegistrar& global() {
  static GlobalRegistrar instance;
  return instance;
}
}  // namespace

void set_qnn_mem_registrar(std::shared_ptr<QnnMemRegistrar> registrar) {
  std::lock_guard lock(global().mutex);
  global().registrar = std::move(registrar);
}

std::shared_ptr<QnnMemRegistrar> qnn_mem_registrar() {
  std::lock_guard lock(global().mutex);
  return global().registrar;
}

}  // namespace kestrel::qnn

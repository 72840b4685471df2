#include "runner_core.h"

#include <random>

#include "bindings.h"
#include "kestrel/api/backend_catalog.h"
#include "kestrel/api/kernel_choice.h"
#include "kestrel/core/error_helpers.h"
#include "kestrel/llm/chat_session.h"

namespace kestrel::python {

RunnerCore::RunnerCore(const std::filesystem::path& path, const py::object& allocator, int threads,
                       const std::string& kernels) {
  llm::RunnerOptions options;
  options.kernels = unwrap(api::kernel_registry_for(kernels, threads));
  options.backends = api::runtime_backends();
  if (PyUnicode_Check(allocator.ptr())) {
    options.allocator = allocator.cast<std::string>();
  } else if (!allocator.is_none()) {
    allocator_ = PythonBufferAllocator::create(allocator);
    options.allocator_instance = allocator_;
  }
  std::optional<Result<std::unique_ptr<llm::Runner>>> loaded;
  {
    py::gil_scoped_release release;
    loaded.emplace(llm::Runner::load(path.string(), options));
  }
  if (allocator_) {
    // A hook's own exception explains a failed load better than the runner's error does.
    if (!loaded->ok()) allocator_->raise_pending_error();
    try {
      allocator_->raise_pending_error();
    } catch (...) {
      loaded.reset();  // frees what the allocator handed out
      throw;
    }
  }
  runner_ = unwrap(std::move(*loaded));
}

RunnerCore::~RunnerCore() { runner_.reset(); }

llm::Runner& RunnerCore::loaded() {
  if (!runner_) {
    PyErr_SetString(PyExc_ValueError, "the runner is closed");
    throw py::error_already_set();
  }
  return *runner_;
}

llm::Runner& RunnerCore::idle() {
  llm::Runner& runner = loaded();
  if (busy_) {
    PyErr_SetString(PyExc_RuntimeError,
                    "the runner is busy with another request (an unfinished stream, or another thread); finish or "
                    "close() the stream first");
    throw py::error_already_set();
  }
  return runner;
}

llm::Runner& RunnerCore::acquire() {
  llm::Runner& runner = idle();
  busy_ = true;
  return runner;
}

void RunnerCore::release() { busy_ = false; }

llm::GenerationConfig generation_config(const GenerationSettings& settings, uint64_t& seed) {
  llm::GenerationConfig config;
  config.max_new_tokens = settings.max_new_tokens;
  config.stop_strings = settings.stop;
  config.add_bos = settings.add_bos;
  config.stop_at_eos = !settings.ignore_eos;
  config.sampler.temperature = settings.temperature;
  config.sampler.top_k = settings.top_k;
  config.sampler.top_p = settings.top_p;
  config.sampler.min_p = settings.min_p;
  config.sampler.repetition_penalty = settings.repeat_penalty;
  config.sampler.repetition_last_n = settings.repeat_last_n;
  if (settings.seed) {
    seed = *settings.seed;
  } else {
    std::random_device device;
    seed = (static_cast<uint64_t>(device()) << 32) | device();
  }
  config.sampler.seed = seed;
  return config;
}

Request prompt_request(Prompt prompt) {
  return [prompt = std::move(prompt)](llm::Runner& runner, const llm::GenerationConfig& config,
                                      const llm::TextCallback& on_text) -> Result<Generation> {
    const auto* text = std::get_if<std::string>(&prompt);
    auto result = text ? runner.generate(*text, config, on_text)
                       : runner.generate_ids(std::get<std::vector<int64_t>>(prompt), config, on_text);
    if (!result.ok()) return result.error();
    Generation generation;
    generation.result = std::move(result).value();
    return generation;
  };
}

Request chat_request(nlohmann::ordered_json messages, nlohmann::ordered_json variables) {
  return [messages = std::move(messages), variables = std::move(variables)](
             llm::Runner& runner, const llm::GenerationConfig& config,
             const llm::TextCallback& on_text) -> Result<Generation> {
    llm::ChatOptions options;
    options.render.extra = variables;
    KESTREL_ASSIGN_OR_RETURN(auto session, llm::ChatSession::create(runner, options));
    KESTREL_ASSIGN_OR_RETURN(auto reply, session.respond(messages, config, on_text));
    Generation generation;
    generation.result = std::move(reply.generation);
    generation.chat_prompt = std::move(reply.prompt);
    generation.reused_tokens = reply.reused_tokens;
    return generation;
  };
}

Generation RunnerCore::run(const Request& request, const GenerationSettings& settings) {
  llm::Runner& runner = acquire();
  struct Release {
    RunnerCore* core;
    ~Release() { core->release(); }
  } release_on_exit{this};

  uint64_t seed = 0;
  llm::GenerationConfig config = generation_config(settings, seed);
  std::optional<py::error_already_set> interrupted;
  config.on_token = [&](int64_t) {
    py::gil_scoped_acquire gil;
    if (PyErr_CheckSignals() == 0) return true;
    interrupted.emplace();  // takes the exception the signal handler raised (KeyboardInterrupt)
    return false;
  };
  std::optional<Result<Generation>> result;
  {
    py::gil_scoped_release release;
    result.emplace(request(runner, config, nullptr));
  }
  if (interrupted) throw *interrupted;
  Generation generation = unwrap(std::move(*result));
  generation.seed = seed;
  return generation;
}

void RunnerCore::reset() {
  acquire().reset();
  release();
}

void RunnerCore::close() {
  if (!runner_) return;
  acquire();
  runner_.reset();
  release();
}

}  // namespace kestrel::python

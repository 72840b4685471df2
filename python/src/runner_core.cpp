#include "runner_core.h"

#include "bindings.h"
#include "kestrel/api/backend_catalog.h"
#include "kestrel/api/kernel_choice.h"
#include "kestrel/core/error_helpers.h"
#include "kestrel/llm/chat_session.h"

namespace kestrel::python {

RunnerCore::RunnerCore(const std::filesystem::path& path, const py::object& allocator, int threads,
                       const std::string& kernels, const std::vector<std::string>& backend_options) {
  llm::RunnerOptions options;
  options.kernels = unwrap(api::kernel_registry_for(kernels, threads));
  options.backends = unwrap(api::runtime_backends(backend_options));
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
  // A hook's own exception explains a failed load better than the runner's error does.
  if (allocator_ && allocator_->has_pending_error()) {
    loaded.reset();  // a loaded runner frees what the allocator handed out
    allocator_->raise_pending_error();
  }
  runner_ = unwrap(std::move(*loaded));
}

// The runner goes first: its buffers are freed through the allocator while that still lives.
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

  llm::GenerationConfig config = api::generation_config(settings);
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
  generation.seed = config.sampler.seed;
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

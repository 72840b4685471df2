// kestrel._kestrel.Runner (wrapped by kestrel.Runner in __init__.py), its results, streams and
// tokenizer view.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <memory>

#include "bindings.h"
#include "kestrel/core/error_helpers.h"
#include "kestrel/llm/chat_template.h"
#include "runner_core.h"
#include "text_stream.h"

namespace kestrel::python {

namespace {

// The runner's tokenizer, reached through the Python runner so it never outlives it.
struct TokenizerView {
  py::object owner;
  const llm::Tokenizer& get() const {
    const llm::Tokenizer* tokenizer = owner.cast<RunnerCore&>().loaded().tokenizer();
    if (tokenizer == nullptr) {
      PyErr_SetString(PyExc_ValueError, "this program carries no tokenizer");
      throw py::error_already_set();
    }
    return *tokenizer;
  }
};

py::object optional_id(int64_t id) { return id < 0 ? py::none() : py::cast(id); }

py::object last_logits(const py::object& self) {
  auto& core = self.cast<RunnerCore&>();
  const auto logits = core.idle().last_logits();
  if (logits.empty()) return py::none();
  // A view of the runner's buffer (no copy) that keeps the runner alive.
  py::array_t<float> array({static_cast<py::ssize_t>(logits.size())}, {static_cast<py::ssize_t>(sizeof(float))},
                           logits.data(), self);
  array.attr("setflags")(py::arg("write") = false);
  return array;
}

// The conversation as JSON (through Python's json module, so any JSON-like value goes).
nlohmann::ordered_json to_json(const py::handle& value, const char* what) {
  const auto text = py::module_::import("json").attr("dumps")(value, py::arg("ensure_ascii") = false).cast<std::string>();
  auto json = nlohmann::ordered_json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded())  // NaN or infinity: valid for Python's json, not for JSON
    raise_error(make_error(ErrorCode::kInvalidArgument, "{} is not valid JSON: {}", what, text));
  return json;
}

Request chat(const py::list& messages, const std::optional<py::list>& tools, const std::optional<py::dict>& variables) {
  nlohmann::ordered_json extra = variables ? to_json(*variables, "template_vars") : nlohmann::ordered_json::object();
  if (tools) extra["tools"] = to_json(*tools, "tools");
  return chat_request(to_json(messages, "messages"), std::move(extra));
}

std::string render_chat(RunnerCore& core, const py::list& messages, bool add_generation_prompt,
                        const std::optional<py::list>& tools, const std::optional<py::dict>& variables) {
  auto chat_template = unwrap(llm::ChatTemplate::from_metadata(core.loaded().program_metadata()));
  if (!chat_template)
    raise_error(make_error(ErrorCode::kNotFound, "this program has no chat template"));
  llm::ChatRenderOptions options;
  if (variables) options.extra = to_json(*variables, "template_vars");
  if (tools) options.extra["tools"] = to_json(*tools, "tools");
  options.add_generation_prompt = add_generation_prompt;
  return unwrap(chat_template->render(to_json(messages, "messages"), options));
}

}  // namespace

void register_runner(py::module_& module) {
  py::class_<GenerationSettings>(module, "GenerationConfig",
                                 "Sampling and stopping settings of one request (the `kestrel run` flags).")
      .def(py::init([](int64_t max_new_tokens, float temperature, int top_k, float top_p, float min_p,
                       float repeat_penalty, int repeat_last_n, std::optional<uint64_t> seed,
                       std::optional<std::vector<std::string>> stop, bool add_bos, bool ignore_eos) {
             return GenerationSettings{max_new_tokens, temperature,  top_k, top_p,   min_p,     repeat_penalty,
                                       repeat_last_n,  seed,         stop.value_or(std::vector<std::string>{}),
                                       add_bos,        ignore_eos};
           }),
           py::kw_only(), py::arg("max_new_tokens") = 128, py::arg("temperature") = 0.8f, py::arg("top_k") = 40,
           py::arg("top_p") = 0.95f, py::arg("min_p") = 0.05f, py::arg("repeat_penalty") = 1.0f,
           py::arg("repeat_last_n") = 64, py::arg("seed") = py::none(), py::arg("stop") = py::none(),
           py::arg("add_bos") = true, py::arg("ignore_eos") = false)
      .def_readwrite("max_new_tokens", &GenerationSettings::max_new_tokens)
      .def_readwrite("temperature", &GenerationSettings::temperature, "0 is greedy")
      .def_readwrite("top_k", &GenerationSettings::top_k, "0 disables")
      .def_readwrite("top_p", &GenerationSettings::top_p, "1 disables")
      .def_readwrite("min_p", &GenerationSettings::min_p, "0 disables")
      .def_readwrite("repeat_penalty", &GenerationSettings::repeat_penalty, "1 disables")
      .def_readwrite("repeat_last_n", &GenerationSettings::repeat_last_n)
      .def_readwrite("seed", &GenerationSettings::seed, "None picks a random seed (reported in the result)")
      .def_readwrite("stop", &GenerationSettings::stop, "stop when one of these texts is generated")
      .def_readwrite("add_bos", &GenerationSettings::add_bos, "prepend bos on the first turn of a session")
      .def_readwrite("ignore_eos", &GenerationSettings::ignore_eos, "keep generating past end-of-sequence tokens");

  py::class_<llm::GenerationStats>(module, "GenerationStats", "Timings and counts of one request.")
      .def_readonly("load_ms", &llm::GenerationStats::load_ms)
      .def_readonly("ttft_ms", &llm::GenerationStats::ttft_ms, "time to the first sampled token")
      .def_readonly("prefill_tokens_per_s", &llm::GenerationStats::prefill_tokens_per_s)
      .def_readonly("decode_tokens_per_s", &llm::GenerationStats::decode_tokens_per_s)
      .def_readonly("prompt_tokens", &llm::GenerationStats::prompt_tokens)
      .def_readonly("generated_tokens", &llm::GenerationStats::generated_tokens)
      .def_readonly("peak_rss_bytes", &llm::GenerationStats::peak_rss_bytes)
      .def("__repr__", [](const llm::GenerationStats& stats) {
        return py::str("GenerationStats(prompt_tokens={}, generated_tokens={}, ttft_ms={:.2f}, "
                       "decode_tokens_per_s={:.1f})")
            .format(stats.prompt_tokens, stats.generated_tokens, stats.ttft_ms, stats.decode_tokens_per_s);
      });

  py::class_<Generation>(module, "GenerationResult", "The outcome of one request.")
      .def_property_readonly("text", [](const Generation& g) { return text(g.result.text); })
      .def_property_readonly("token_ids", [](const Generation& g) { return g.result.token_ids; },
                             "generated token ids (an end-of-sequence token that stopped it excluded)")
      .def_property_readonly("prompt_token_ids", [](const Generation& g) { return g.result.prompt_token_ids; })
      .def_property_readonly("stop_reason", [](const Generation& g) { return g.result.stop_reason; },
                             "eos, stop_string, max_new_tokens, or callback (stopped by the caller)")
      .def_property_readonly("stats", [](const Generation& g) { return g.result.stats; })
      .def_readonly("seed", &Generation::seed)
      .def_readonly("chat_prompt", &Generation::chat_prompt,
                    "chat: the rendered conversation the reply continues (None for plain prompts)")
      .def_readonly("reused_tokens", &Generation::reused_tokens,
                    "chat: positions of earlier turns whose cache was kept (only the rest was prefilled)")
      .def("__repr__", [](const Generation& g) {
        return py::str("GenerationResult(text={!r}, stop_reason={!r}, tokens={})")
            .format(text(g.result.text), g.result.stop_reason, g.result.token_ids.size());
      });

  py::class_<TokenizerView>(module, "Tokenizer", "The tokenizer a program carries.")
      .def(
          "encode",
          [](const TokenizerView& view, const std::string& text, bool add_bos) {
            return unwrap(view.get().encode(text, add_bos));
          },
          py::arg("text"), py::arg("add_bos") = false, "Token ids of `text`; add_bos prepends the bos token.")
      .def(
          "decode",
          [](const TokenizerView& view, const std::vector<int64_t>& ids) {
            return text(unwrap(view.get().decode(ids)));
          },
          py::arg("ids"), "Text of `ids` (special tokens rendered; invalid UTF-8 as U+FFFD).")
      .def("token_id",
           [](const TokenizerView& view, const std::string& piece) { return view.get().token_id(piece); },
           py::arg("piece"), "Id of a token by its vocabulary spelling, or None.")
      .def_property_readonly("vocab_size", [](const TokenizerView& view) { return view.get().vocab_size(); })
      .def_property_readonly("bos_id", [](const TokenizerView& view) { return optional_id(view.get().bos_id()); })
      .def_property_readonly("eos_ids", [](const TokenizerView& view) { return view.get().eos_ids(); });

  py::class_<TextStream>(module, "TextStream",
                         R"(Text pieces of a request as they are generated; iterate it.

Their concatenation is the request's text. `result` holds the GenerationResult once the stream
has ended; close() (or dropping the stream) stops the request after the current token. The
runner takes no other request until the stream ends.)")
      .def("__iter__", [](py::object self) { return self; })
      .def("__next__", &TextStream::next)
      .def("close", &TextStream::close)
      .def_property_readonly("result", &TextStream::result)
      .def("__enter__", [](py::object self) { return self; })
      .def("__exit__", [](TextStream& stream, const py::args&) { stream.close(); });

  py::class_<RunnerCore>(module, "Runner", "The native runner; use kestrel.Runner.")
      .def(py::init<const std::filesystem::path&, const py::object&, int, const std::string&,
                    const std::vector<std::string>&>(),
           py::arg("path"), py::arg("allocator") = py::none(), py::arg("threads") = 0, py::arg("kernels") = "optimized",
           py::arg("backend_options") = std::vector<std::string>{})
      .def(
          "generate",
          [](RunnerCore& core, Prompt prompt, const GenerationSettings& settings) {
            return core.run(prompt_request(std::move(prompt)), settings);
          },
          py::arg("prompt"), py::arg("config"))
      .def(
          "stream",
          [](const py::object& self, Prompt prompt, const GenerationSettings& settings) {
            return std::make_unique<TextStream>(self, self.cast<RunnerCore&>(), prompt_request(std::move(prompt)),
                                                settings);
          },
          py::arg("prompt"), py::arg("config"))
      .def(
          "chat",
          [](RunnerCore& core, const py::list& messages, const GenerationSettings& settings,
             const std::optional<py::list>& tools, const std::optional<py::dict>& variables) {
            return core.run(chat(messages, tools, variables), settings);
          },
          py::arg("messages"), py::arg("config"), py::arg("tools") = py::none(), py::arg("template_vars") = py::none())
      .def(
          "stream_chat",
          [](const py::object& self, const py::list& messages, const GenerationSettings& settings,
             const std::optional<py::list>& tools, const std::optional<py::dict>& variables) {
            return std::make_unique<TextStream>(self, self.cast<RunnerCore&>(), chat(messages, tools, variables),
                                                settings);
          },
          py::arg("messages"), py::arg("config"), py::arg("tools") = py::none(), py::arg("template_vars") = py::none())
      .def("render_chat", &render_chat, py::arg("messages"), py::arg("add_generation_prompt") = true,
           py::arg("tools") = py::none(), py::arg("template_vars") = py::none())
      .def("reset", &RunnerCore::reset)
      .def("close", &RunnerCore::close)
      .def("last_logits", &last_logits)
      .def_property_readonly("tokenizer",
                             [](const py::object& self) -> py::object {
                               if (self.cast<RunnerCore&>().loaded().tokenizer() == nullptr) return py::none();
                               return py::cast(TokenizerView{self});
                             })
      .def_property_readonly("vocab_size", [](RunnerCore& core) { return core.loaded().model_info().vocab_size; })
      .def_property_readonly("max_context", [](RunnerCore& core) { return core.loaded().model_info().max_context; })
      .def_property_readonly("bos_id",
                             [](RunnerCore& core) { return optional_id(core.loaded().model_info().bos_id); })
      .def_property_readonly("eos_ids", [](RunnerCore& core) { return core.loaded().model_info().eos_ids; })
      .def_property_readonly("position", [](RunnerCore& core) { return core.idle().position(); })
      .def_property_readonly("load_ms", [](RunnerCore& core) { return core.loaded().load_ms(); });
}

}  // namespace kestrel::python

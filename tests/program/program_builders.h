// Small helpers that build ProgramSpecs for the program-file tests.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "kestrel/program/spec.h"
#include "kestrel/program/validate.h"

namespace kestrel::program::testing {

inline uint64_t storage_of(DType dtype, const std::vector<int64_t>& shape) {
  ValueSpec value;
  value.dtype = dtype;
  value.shape = shape;
  auto bytes = value_storage_bytes(value);
  return bytes.ok() ? *bytes : 0;
}

inline ValueSpec make_value(std::string name, ValueKind kind, DType dtype, std::vector<int64_t> shape) {
  ValueSpec value;
  value.name = std::move(name);
  value.kind = kind;
  value.dtype = dtype;
  value.shape = std::move(shape);
  return value;
}

inline ValueSpec input(std::string name, DType dtype, std::vector<int64_t> shape) {
  return make_value(std::move(name), ValueKind::kInput, dtype, std::move(shape));
}

inline ValueSpec output(std::string name, DType dtype, std::vector<int64_t> shape) {
  return make_value(std::move(name), ValueKind::kOutput, dtype, std::move(shape));
}

// nbytes is computed from the dtype and shape.
inline ValueSpec constant(std::string name, DType dtype, std::vector<int64_t> shape, uint32_t segment, uint64_t offset) {
  ValueSpec value = make_value(std::move(name), ValueKind::kConstant, dtype, std::move(shape));
  value.constant = {segment, offset, storage_of(value.dtype, value.shape)};
  return value;
}

inline ValueSpec intermediate(std::string name, DType dtype, std::vector<int64_t> shape, uint64_t arena_offset) {
  ValueSpec value = make_value(std::move(name), ValueKind::kIntermediate, dtype, std::move(shape));
  value.arena_offset = arena_offset;
  return value;
}

inline ValueSpec alias(std::string name, DType dtype, std::vector<int64_t> shape, int32_t of) {
  ValueSpec value = make_value(std::move(name), ValueKind::kAlias, dtype, std::move(shape));
  value.alias_of = of;
  return value;
}

inline std::vector<uint8_t> pattern(size_t n, uint8_t seed) {
  std::vector<uint8_t> bytes(n);
  for (size_t i = 0; i < n; ++i) bytes[i] = static_cast<uint8_t>(seed + i * 7);
  return bytes;
}

inline std::vector<uint8_t> text_bytes(std::string_view text) { return {text.begin(), text.end()}; }

// Two methods sharing constants in segment 0, a second constant segment, a delegate payload
// segment, metadata of every type, kernel and delegate calls, attributes of every type, an alias
// and a q8 constant.
inline ProgramSpec rich_program() {
  ProgramSpec spec;
  spec.metadata["io_contract"] = std::string("hf_static");
  spec.metadata["io_contract_version"] = int64_t{1};
  spec.metadata["temperature"] = 0.75;
  spec.metadata["use_cache"] = true;
  spec.metadata["eos_ids"] = std::vector<int64_t>{1, 2};
  spec.metadata["names"] = std::vector<std::string>{"alpha", "beta"};
  std::vector<int64_t> big(20);
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<int64_t>(i);
  spec.metadata["big_list"] = big;
  spec.metadata["negative"] = int64_t{-42};

  spec.segments.push_back(pattern(256, 1));             // 0: weights shared by both methods
  spec.segments.push_back(text_bytes("payload-bytes"));  // 1: delegate payload
  spec.segments.push_back(pattern(32, 9));              // 2: a table used by decode only

  DelegateSpec delegate;
  delegate.backend_id = "qnn";
  delegate.payload_segment = 1;
  delegate.compile_specs["soc_model"] = text_bytes("SM8650");
  delegate.compile_specs["blob"] = {0x00, 0x01, 0x02, 0xff};
  delegate.compile_specs["empty"] = {};
  spec.delegates.push_back(delegate);

  MethodSpec prefill;
  prefill.name = "prefill";
  prefill.values = {
      input("tokens", DType::kI64, {1, 4}),                   // 0
      input("positions", DType::kI64, {4}),                   // 1
      constant("w", DType::kF32, {2, 8}, 0, 0),                // 2: 64 bytes
      constant("b", DType::kF32, {8}, 0, 64),                  // 3: 32 bytes
      constant("q", DType::kQ8, {2, 32}, 0, 128),              // 4: 68 bytes
      intermediate("h", DType::kF32, {1, 4, 8}, 0),            // 5: 128 bytes
      alias("h2", DType::kF32, {4, 8}, 5),                     // 6
      intermediate("d", DType::kF32, {1, 4, 8}, 128),          // 7
      output("logits", DType::kF32, {1, 4, 8}),                // 8
      intermediate("scalar", DType::kBF16, {}, 254),           // 9: rank 0
  };
  prefill.inputs = {0, 1};
  prefill.outputs = {8};
  prefill.arena_bytes = 256;
  prefill.instructions.push_back(KernelCall{"embedding",
                                            {2, 0},
                                            {5},
                                            {{"axis", int64_t{0}},
                                             {"eps", 1e-5},
                                             {"mode", std::string("fast")},
                                             {"perm", std::vector<int64_t>{1, 0}},
                                             {"scales", std::vector<double>{0.5, 2.0}}}});
  prefill.instructions.push_back(KernelCall{"add", {6, 3}, {7}, {}});
  prefill.instructions.push_back(KernelCall{"linear", {7, 4}, {9}, {}});
  prefill.instructions.push_back(DelegateCall{0, {7, 1}, {8}});
  spec.methods.push_back(prefill);

  MethodSpec decode;
  decode.name = "decode";
  decode.values = {
      input("tokens", DType::kI64, {1, 1}),           // 0
      constant("w", DType::kF32, {2, 8}, 0, 0),        // 1: shared with prefill
      constant("table", DType::kI64, {4}, 2, 0),       // 2
      output("logits", DType::kF32, {1, 1, 8}),        // 3
      intermediate("t", DType::kF32, {1, 1, 8}, 0),    // 4
  };
  decode.inputs = {0};
  decode.outputs = {3};
  decode.arena_bytes = 64;
  decode.instructions.push_back(KernelCall{"embedding", {1, 0}, {4}, {{"axis", int64_t{1}}}});
  decode.instructions.push_back(DelegateCall{0, {4, 2}, {3}});
  spec.methods.push_back(decode);
  return spec;
}

// One method: out = add(x, c), with c a constant.
inline ProgramSpec small_program() {
  ProgramSpec spec;
  spec.segments.push_back(pattern(96, 3));
  MethodSpec method;
  method.name = "forward";
  method.values = {
      input("x", DType::kF32, {2, 3, 4}),
      constant("c", DType::kF32, {2, 3, 4}, 0, 0),
      intermediate("t", DType::kF32, {2, 3, 4}, 0),
      output("out", DType::kF32, {2, 3, 4}),
  };
  method.inputs = {0};
  method.outputs = {3};
  method.arena_bytes = 128;
  method.instructions.push_back(KernelCall{"add", {0, 1}, {2}, {}});
  method.instructions.push_back(KernelCall{"add", {2, 1}, {3}, {}});
  spec.methods.push_back(method);
  return spec;
}

// A fresh directory for one test's files, removed when the object goes away.
class TempDir {
 public:
  explicit TempDir(const std::string& name)
      : path_(std::filesystem::path(KESTREL_TEST_BINARY_DIR) / "program_tmp" /
              (name + "." + std::to_string(::getpid()))) {
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

inline void write_bytes(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

inline std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The spec as the loader returns it: segment bytes are served by LoadedProgram, not the spec.
inline ProgramSpec without_segments(ProgramSpec spec) {
  spec.segments.clear();
  return spec;
}

}  // namespace kestrel::program::testing

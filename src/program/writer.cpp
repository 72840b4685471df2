#include "kestrel/program/writer.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <exception>
#include <functional>
#include <new>
#include <span>
#include <utility>

#include "kestrel/core/error_helpers.h"
#include "kestrel/program/validate.h"
#include "program/checksum.h"
#include "program/format.h"
#include "program/temp_file.h"
#include "program_generated.h"

namespace kestrel::program {

namespace format {

namespace {

template <typename T>
void put_le(uint8_t* out, T value) {
  for (size_t i = 0; i < sizeof(T); ++i) out[i] = static_cast<uint8_t>(static_cast<uint64_t>(value) >> (8 * i));
}

uint64_t align_up(uint64_t value, uint64_t alignment) { return (value + alignment - 1) / alignment * alignment; }

template <typename... Ts>
struct Overloaded : Ts... {
  using Ts::operator()...;
};
template <typename... Ts>
Overloaded(Ts...) -> Overloaded<Ts...>;

using flatbuffers::FlatBufferBuilder;
using flatbuffers::Offset;

Offset<fb::MetaEntry> build_meta(FlatBufferBuilder& fbb, const std::string& key, const MetaValue& value) {
  const auto key_offset = fbb.CreateString(key);
  const auto [type, offset] = std::visit(
      Overloaded{
          [&](int64_t v) { return std::pair(fb::MetaValue::IntValue, fb::CreateIntValue(fbb, v).Union()); },
          [&](double v) { return std::pair(fb::MetaValue::DoubleValue, fb::CreateDoubleValue(fbb, v).Union()); },
          [&](bool v) { return std::pair(fb::MetaValue::BoolValue, fb::CreateBoolValue(fbb, v).Union()); },
          [&](const std::string& v) {
            const auto s = fbb.CreateString(v);
            return std::pair(fb::MetaValue::StringValue, fb::CreateStringValue(fbb, s).Union());
          },
          [&](const std::vector<int64_t>& v) {
            const auto list = fbb.CreateVector(v);
            return std::pair(fb::MetaValue::IntList, fb::CreateIntList(fbb, list).Union());
          },
          [&](const std::vector<std::string>& v) {
            const auto list = fbb.CreateVectorOfStrings(v);
            return std::pair(fb::MetaValue::StringList, fb::CreateStringList(fbb, list).Union());
          },
      },
      value);
  return fb::CreateMetaEntry(fbb, key_offset, type, offset);
}

Offset<fb::Attr> build_attr(FlatBufferBuilder& fbb, const std::string& key, const AttrValue& value) {
  const auto key_offset = fbb.CreateString(key);
  const auto [type, offset] = std::visit(
      Overloaded{
          [&](int64_t v) { return std::pair(fb::AttrValue::IntValue, fb::CreateIntValue(fbb, v).Union()); },
          [&](double v) { return std::pair(fb::AttrValue::DoubleValue, fb::CreateDoubleValue(fbb, v).Union()); },
          [&](const std::string& v) {
            const auto s = fbb.CreateString(v);
            return std::pair(fb::AttrValue::StringValue, fb::CreateStringValue(fbb, s).Union());
          },
          [&](const std::vector<int64_t>& v) {
            const auto list = fbb.CreateVector(v);
            return std::pair(fb::AttrValue::IntList, fb::CreateIntList(fbb, list).Union());
          },
          [&](const std::vector<double>& v) {
            const auto list = fbb.CreateVector(v);
            return std::pair(fb::AttrValue::DoubleList, fb::CreateDoubleList(fbb, list).Union());
          },
      },
      value);
  return fb::CreateAttr(fbb, key_offset, type, offset);
}

Offset<fb::Value> build_value(FlatBufferBuilder& fbb, const ValueSpec& value) {
  const auto name = fbb.CreateString(value.name);
  const auto shape = value.shape.empty() ? Offset<flatbuffers::Vector<int64_t>>() : fbb.CreateVector(value.shape);
  const fb::ConstantRef constant(value.constant.segment, value.constant.offset, value.constant.nbytes);
  const bool has_constant = value.constant != ConstantRef{};
  return fb::CreateValue(fbb, name, static_cast<uint8_t>(value.dtype), shape, static_cast<uint8_t>(value.kind),
                         has_constant ? &constant : nullptr, value.arena_offset, value.alias_of);
}

Offset<fb::Instruction> build_instruction(FlatBufferBuilder& fbb, const Instruction& instruction) {
  if (const auto* call = std::get_if<KernelCall>(&instruction)) {
    const auto op = fbb.CreateString(call->op);
    const auto inputs = fbb.CreateVector(call->inputs);
    const auto outputs = fbb.CreateVector(call->outputs);
    std::vector<Offset<fb::Attr>> attrs;
    for (const auto& [key, value] : call->attrs) attrs.push_back(build_attr(fbb, key, value));
    const auto attr_vector = fbb.CreateVector(attrs);
    const auto kernel = fb::CreateKernelCall(fbb, op, inputs, outputs, attr_vector);
    return fb::CreateInstruction(fbb, fb::Call::KernelCall, kernel.Union());
  }
  const auto& call = std::get<DelegateCall>(instruction);
  const auto inputs = fbb.CreateVector(call.inputs);
  const auto outputs = fbb.CreateVector(call.outputs);
  const auto delegate = fb::CreateDelegateCall(fbb, call.delegate, inputs, outputs);
  return fb::CreateInstruction(fbb, fb::Call::DelegateCall, delegate.Union());
}

Offset<fb::Method> build_method(FlatBufferBuilder& fbb, const MethodSpec& method) {
  const auto name = fbb.CreateString(method.name);
  std::vector<Offset<fb::Value>> values;
  for (const auto& value : method.values) values.push_back(build_value(fbb, value));
  const auto value_vector = fbb.CreateVector(values);
  const auto inputs = fbb.CreateVector(method.inputs);
  const auto outputs = fbb.CreateVector(method.outputs);
  std::vector<Offset<fb::Instruction>> instructions;
  for (const auto& instruction : method.instructions) instructions.push_back(build_instruction(fbb, instruction));
  const auto instruction_vector = fbb.CreateVector(instructions);
  return fb::CreateMethod(fbb, name, value_vector, inputs, outputs, instruction_vector, method.arena_bytes);
}

Offset<fb::Delegate> build_delegate(FlatBufferBuilder& fbb, const DelegateSpec& delegate) {
  const auto backend = fbb.CreateString(delegate.backend_id);
  std::vector<Offset<fb::CompileSpec>> specs;
  for (const auto& [key, value] : delegate.compile_specs) {
    const auto key_offset = fbb.CreateString(key);
    const auto bytes = fbb.CreateVector(value);
    specs.push_back(fb::CreateCompileSpec(fbb, key_offset, bytes));
  }
  const auto spec_vector = fbb.CreateVector(specs);
  return fb::CreateDelegate(fbb, backend, delegate.payload_segment, spec_vector);
}

// The description block. Built twice per file: with placeholder checksums to place the data
// area, then with the checksums found while streaming the segments. Checksums are fixed-size
// struct fields, so both builds have the same layout and size.
void build_description(FlatBufferBuilder& fbb, const ProgramSpec& spec, const std::vector<SegmentRange>& table) {
  std::vector<Offset<fb::MetaEntry>> metadata;
  for (const auto& [key, value] : spec.metadata) metadata.push_back(build_meta(fbb, key, value));
  const auto metadata_vector = fbb.CreateVector(metadata);
  std::vector<Offset<fb::Method>> methods;
  for (const auto& method : spec.methods) methods.push_back(build_method(fbb, method));
  const auto method_vector = fbb.CreateVector(methods);
  std::vector<fb::Segment> segments;
  for (const auto& range : table) segments.emplace_back(range.offset, range.size, range.checksum);
  const auto segment_vector = fbb.CreateVectorOfStructs(segments);
  std::vector<Offset<fb::Delegate>> delegates;
  for (const auto& delegate : spec.delegates) delegates.push_back(build_delegate(fbb, delegate));
  const auto delegate_vector = fbb.CreateVector(delegates);
  const auto root = fb::CreateProgram(fbb, spec.version, metadata_vector, method_vector, segment_vector, delegate_vector);
  fb::FinishProgramBuffer(fbb, root);
}

std::span<const uint8_t> bytes_of(const FlatBufferBuilder& fbb) { return {fbb.GetBufferPointer(), fbb.GetSize()}; }

// Where the file's bytes go: memory, or a file written front to back.
class Output {
 public:
  virtual ~Output() = default;
  virtual Status append(std::span<const uint8_t> bytes) = 0;
  // Replaces bytes appended earlier, at `offset` from the start.
  virtual Status overwrite(uint64_t offset, std::span<const uint8_t> bytes) = 0;
  virtual Status finish() = 0;

  Status append_zeros(uint64_t count) {
    static constexpr uint8_t kZeros[kSegmentAlignment] = {};
    while (count > 0) {
      const uint64_t n = std::min<uint64_t>(count, sizeof(kZeros));
      KESTREL_RETURN_IF_ERROR(append({kZeros, static_cast<size_t>(n)}));
      count -= n;
    }
    return ok_status();
  }
};

class MemoryOutput final : public Output {
 public:
  explicit MemoryOutput(uint64_t expected_size) { bytes_.reserve(expected_size); }
  Status append(std::span<const uint8_t> bytes) override {
    bytes_.insert(bytes_.end(), bytes.begin(), bytes.end());
    return ok_status();
  }
  Status overwrite(uint64_t offset, std::span<const uint8_t> bytes) override {
    std::memcpy(bytes_.data() + offset, bytes.data(), bytes.size());
    return ok_status();
  }
  Status finish() override { return ok_status(); }
  std::vector<uint8_t> take() { return std::move(bytes_); }

 private:
  std::vector<uint8_t> bytes_;
};

// Buffers small pieces (headers, padding, small constants) into large writes.
class FileOutput final : public Output {
 public:
  FileOutput(int fd, std::string path) : fd_(fd), path_(std::move(path)), buffer_(kBufferBytes) {}
  Status append(std::span<const uint8_t> bytes) override {
    if (used_ + bytes.size() > buffer_.size()) KESTREL_RETURN_IF_ERROR(flush());
    if (bytes.size() >= buffer_.size()) return write_all(bytes);
    std::memcpy(buffer_.data() + used_, bytes.data(), bytes.size());
    used_ += bytes.size();
    return ok_status();
  }
  Status overwrite(uint64_t offset, std::span<const uint8_t> bytes) override {
    KESTREL_RETURN_IF_ERROR(flush());
    while (!bytes.empty()) {
      const ssize_t n = ::pwrite(fd_, bytes.data(), bytes.size(), static_cast<off_t>(offset));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return error("cannot write");
      bytes = bytes.subspan(static_cast<size_t>(n));
      offset += static_cast<uint64_t>(n);
    }
    return ok_status();
  }
  Status finish() override { return flush(); }

 private:
  static constexpr size_t kBufferBytes = size_t{1} << 20;

  Status flush() {
    const size_t used = std::exchange(used_, 0);
    return write_all({buffer_.data(), used});
  }
  Status write_all(std::span<const uint8_t> bytes) {
    while (!bytes.empty()) {
      const ssize_t n = ::write(fd_, bytes.data(), bytes.size());
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return error("cannot write");
      bytes = bytes.subspan(static_cast<size_t>(n));
    }
    return ok_status();
  }
  Status error(const char* what) const {
    return make_error(ErrorCode::kIo, "{} '{}': {}", what, path_, std::strerror(errno == 0 ? EIO : errno));
  }

  int fd_;
  std::string path_;
  std::vector<uint8_t> buffer_;
  size_t used_ = 0;
};

using Progress = std::function<void(uint64_t, uint64_t)>;

Status emit(const ProgramSpec& spec, const SerializeOptions& options, Output& out, const Progress& progress) {
  if (options.validate) {
    auto status = validate_program(spec);
    if (!status.ok()) return status.error().with_context("refusing to write an invalid program");
  }

  // Lay the data area out first: the segment table is part of the flatbuffer.
  std::vector<SegmentRange> layout;
  uint64_t data_size = 0;
  for (const auto& segment : spec.segments) {
    const uint64_t offset = align_up(data_size, kSegmentAlignment);
    layout.push_back({offset, segment.size(), 0});
    data_size = offset + segment.size();
  }
  const auto table = [&]() -> const std::vector<SegmentRange>& {
    return options.segment_table ? *options.segment_table : layout;
  };

  FlatBufferBuilder placeholder(4096);
  build_description(placeholder, spec, table());
  Header header;
  header.flatbuffer_offset = kHeaderBytes;
  header.flatbuffer_size = placeholder.GetSize();
  header.data_offset = align_up(header.flatbuffer_offset + header.flatbuffer_size, kSegmentAlignment);
  header.data_size = data_size;
  const uint64_t total = header.data_offset + header.data_size;

  uint8_t header_bytes[kHeaderBytes];
  encode_header(header, header_bytes);
  KESTREL_RETURN_IF_ERROR(out.append(header_bytes));
  KESTREL_RETURN_IF_ERROR(out.append(bytes_of(placeholder)));
  KESTREL_RETURN_IF_ERROR(out.append_zeros(header.data_offset - header.flatbuffer_offset - header.flatbuffer_size));
  uint64_t written = header.data_offset, data_cursor = 0;
  if (progress) progress(written, total);

  StreamingChecksum sum;
  for (size_t i = 0; i < spec.segments.size(); ++i) {
    SegmentRange& range = layout[i];
    KESTREL_RETURN_IF_ERROR(out.append_zeros(range.offset - data_cursor));
    written += range.offset - data_cursor;
    sum.reset();
    uint64_t produced = 0;
    const auto index = static_cast<uint32_t>(i);
    const auto sink = [&](std::span<const uint8_t> chunk) -> Status {
      if (chunk.size() > range.size - produced)
        return make_error(ErrorCode::kInternal, "its source produced more than the {} bytes it declared", range.size);
      sum.update(chunk);
      produced += chunk.size();
      written += chunk.size();
      KESTREL_RETURN_IF_ERROR(out.append(chunk));
      if (progress) progress(written, total);
      return ok_status();
    };
    if (const ByteSource* source = spec.segments[i].source()) {
      auto status = source->write_to(sink);
      if (!status.ok())
        return status.error().with_context(fmt::format("writing segment {} ({})", i, segment_role(spec, index)));
    }
    if (produced != range.size)
      return make_error(ErrorCode::kInternal, "writing segment {} ({}): its source produced {} bytes of the {} it declared",
                        i, segment_role(spec, index), produced, range.size);
    range.checksum = sum.digest();
    data_cursor = range.offset + range.size;
  }

  FlatBufferBuilder description(4096);
  build_description(description, spec, table());
  if (description.GetSize() != header.flatbuffer_size)
    return make_error(ErrorCode::kInternal, "the description changed size ({} -> {} bytes) when its checksums were filled",
                      header.flatbuffer_size, description.GetSize());
  header.flatbuffer_checksum = checksum(bytes_of(description));
  encode_header(header, header_bytes);
  KESTREL_RETURN_IF_ERROR(out.overwrite(0, header_bytes));
  KESTREL_RETURN_IF_ERROR(out.overwrite(header.flatbuffer_offset, bytes_of(description)));
  return out.finish();
}

}  // namespace

void encode_header(const Header& header, uint8_t* out) {
  std::memcpy(out, kMagic.data(), kMagic.size());
  put_le(out + kVersionField, header.format_version);
  put_le(out + kFlagsField, header.flags);
  put_le(out + kFlatbufferOffsetField, header.flatbuffer_offset);
  put_le(out + kFlatbufferSizeField, header.flatbuffer_size);
  put_le(out + kDataOffsetField, header.data_offset);
  put_le(out + kDataSizeField, header.data_size);
  put_le(out + kFlatbufferChecksumField, header.flatbuffer_checksum);
}

Result<std::vector<uint8_t>> serialize(const ProgramSpec& spec, const SerializeOptions& options) {
  try {
    MemoryOutput out(0);
    KESTREL_RETURN_IF_ERROR(emit(spec, options, out, nullptr));
    return out.take();
  } catch (const std::bad_alloc&) {
    return make_error(ErrorCode::kCapacity, "out of memory while serializing the program");
  } catch (const std::exception& e) {
    return make_error(ErrorCode::kInternal, "serializing the program failed: {}", e.what());
  }
}

}  // namespace format

Result<std::vector<uint8_t>> serialize_program(const ProgramSpec& spec) {
  return format::serialize(spec, format::SerializeOptions{});
}

namespace {

Status write_streamed(const ProgramSpec& spec, const std::string& path, const WriteOptions& options) {
  // Validate before the temporary file exists: an invalid spec leaves no trace.
  auto valid = validate_program(spec);
  if (!valid.ok()) return valid.error().with_context("refusing to write an invalid program");
  KESTREL_ASSIGN_OR_RETURN(TempFile temp, TempFile::create(path));
  format::FileOutput out(temp.fd(), temp.path());
  format::SerializeOptions serialize;
  serialize.validate = false;
  KESTREL_RETURN_IF_ERROR(format::emit(spec, serialize, out, options.progress));
  return temp.commit();
}

}  // namespace

Status write_program(const ProgramSpec& spec, const std::string& path, const WriteOptions& options) {
  try {
    auto status = write_streamed(spec, path, options);
    if (!status.ok()) return status.error().with_context(fmt::format("writing '{}'", path));
    return status;
  } catch (const std::bad_alloc&) {
    return make_error(ErrorCode::kCapacity, "writing '{}': out of memory", path);
  } catch (const std::exception& e) {
    return make_error(ErrorCode::kIo, "writing '{}' failed: {}", path, e.what());
  }
}

}  // namespace kestrel::program

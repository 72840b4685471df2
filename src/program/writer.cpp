#include "kestrel/program/writer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <exception>
#include <new>

#include "kestrel/core/error_helpers.h"
#include "kestrel/program/validate.h"
#include "program/format.h"
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

Result<std::vector<uint8_t>> serialize_impl(const ProgramSpec& spec, const SerializeOptions& options) {
  if (options.validate) {
    auto status = validate_program(spec);
    if (!status.ok()) return status.error().with_context("refusing to write an invalid program");
  }

  // Lay the data area out first: the segment table is part of the flatbuffer.
  std::vector<SegmentRange> layout;
  uint64_t data_size = 0;
  for (const auto& segment : spec.segments) {
    const uint64_t offset = align_up(data_size, kSegmentAlignment);
    layout.push_back({offset, segment.size()});
    data_size = offset + segment.size();
  }
  const std::vector<SegmentRange>& table = options.segment_table ? *options.segment_table : layout;

  FlatBufferBuilder fbb(4096);
  std::vector<Offset<fb::MetaEntry>> metadata;
  for (const auto& [key, value] : spec.metadata) metadata.push_back(build_meta(fbb, key, value));
  const auto metadata_vector = fbb.CreateVector(metadata);
  std::vector<Offset<fb::Method>> methods;
  for (const auto& method : spec.methods) methods.push_back(build_method(fbb, method));
  const auto method_vector = fbb.CreateVector(methods);
  std::vector<fb::Segment> segments;
  for (const auto& range : table) segments.emplace_back(range.offset, range.size);
  const auto segment_vector = fbb.CreateVectorOfStructs(segments);
  std::vector<Offset<fb::Delegate>> delegates;
  for (const auto& delegate : spec.delegates) delegates.push_back(build_delegate(fbb, delegate));
  const auto delegate_vector = fbb.CreateVector(delegates);
  const auto root = fb::CreateProgram(fbb, spec.version, metadata_vector, method_vector, segment_vector, delegate_vector);
  fb::FinishProgramBuffer(fbb, root);

  Header header;
  header.flatbuffer_offset = kHeaderBytes;
  header.flatbuffer_size = fbb.GetSize();
  header.data_offset = align_up(header.flatbuffer_offset + header.flatbuffer_size, kSegmentAlignment);
  header.data_size = data_size;

  std::vector<uint8_t> file(header.data_offset + header.data_size, 0);
  encode_header(header, file.data());
  std::memcpy(file.data() + header.flatbuffer_offset, fbb.GetBufferPointer(), fbb.GetSize());
  for (size_t i = 0; i < spec.segments.size(); ++i)
    if (!spec.segments[i].empty())
      std::memcpy(file.data() + header.data_offset + layout[i].offset, spec.segments[i].data(), spec.segments[i].size());
  return file;
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
}

Result<std::vector<uint8_t>> serialize(const ProgramSpec& spec, const SerializeOptions& options) {
  try {
    return serialize_impl(spec, options);
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

Status io_error(const std::string& what, const std::string& path) {
  return make_error(ErrorCode::kIo, "{} '{}': {}", what, path, std::strerror(errno));
}

Status write_file_atomically(const std::vector<uint8_t>& bytes, const std::string& path) {
  std::string temp = path + ".tmp.XXXXXX";
  const int fd = ::mkstemp(temp.data());
  if (fd < 0) return io_error("cannot create a temporary file next to", path);
  auto fail = [&](const char* what) {
    Status status = io_error(what, temp);
    ::close(fd);
    ::unlink(temp.c_str());
    return status;
  };
  if (::fchmod(fd, 0644) != 0) return fail("cannot set permissions of");
  size_t written = 0;
  while (written < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + written, bytes.size() - written);
    if (n < 0) {
      if (errno == EINTR) continue;
      return fail("cannot write");
    }
    written += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) return fail("cannot flush");
  if (::close(fd) != 0) {
    Status status = io_error("cannot close", temp);
    ::unlink(temp.c_str());
    return status;
  }
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    Status status = io_error("cannot rename the temporary file to", path);
    ::unlink(temp.c_str());
    return status;
  }
  return ok_status();
}

}  // namespace

Status write_program(const ProgramSpec& spec, const std::string& path) {
  KESTREL_ASSIGN_OR_RETURN(auto bytes, serialize_program(spec));
  try {
    return write_file_atomically(bytes, path);
  } catch (const std::exception& e) {
    return make_error(ErrorCode::kIo, "writing '{}' failed: {}", path, e.what());
  }
}

}  // namespace kestrel::program

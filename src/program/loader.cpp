// LoadedProgram: maps (or copies) a program file and verifies all of it before handing out a
// ProgramSpec. Nothing read from the file is used before it has been range-checked.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <new>
#include <set>

#include "kestrel/core/error_helpers.h"
#include "kestrel/program/loaded_program.h"
#include "kestrel/program/validate.h"
#include "program/checksum.h"
#include "program/format.h"
#include "program_generated.h"

namespace kestrel::program {

namespace format {

namespace {
template <typename T>
T get_le(const uint8_t* p) {
  uint64_t value = 0;
  for (size_t i = 0; i < sizeof(T); ++i) value |= static_cast<uint64_t>(p[i]) << (8 * i);
  return static_cast<T>(value);
}
}  // namespace

Result<Header> decode_header(std::span<const uint8_t> bytes) {
  const uint64_t size = bytes.size();
  if (size == 0) return make_error(ErrorCode::kCorrupt, "the file is empty (0 bytes), not a program file");
  if (size < kHeaderBytes)
    return make_error(ErrorCode::kCorrupt, "header: the file has {} bytes, fewer than the {}-byte header (truncated?)",
                      size, kHeaderBytes);
  if (std::memcmp(bytes.data(), kMagic.data(), kMagic.size()) != 0)
    return make_error(ErrorCode::kCorrupt, "header: bad magic {:02x} (expected \"KESTREL\\0\"): not a Kestrel program file",
                      fmt::join(bytes.subspan(0, kMagic.size()), " "));
  Header header;
  header.format_version = get_le<uint32_t>(bytes.data() + kVersionField);
  header.flags = get_le<uint32_t>(bytes.data() + kFlagsField);
  header.flatbuffer_offset = get_le<uint64_t>(bytes.data() + kFlatbufferOffsetField);
  header.flatbuffer_size = get_le<uint64_t>(bytes.data() + kFlatbufferSizeField);
  header.data_offset = get_le<uint64_t>(bytes.data() + kDataOffsetField);
  header.data_size = get_le<uint64_t>(bytes.data() + kDataSizeField);
  header.flatbuffer_checksum = get_le<uint64_t>(bytes.data() + kFlatbufferChecksumField);

  if (header.format_version == 1)
    return make_error(ErrorCode::kUnsupported,
                      "header: format version 1 (written before programs carried checksums) is no longer supported: "
                      "export the checkpoint again");
  if (header.format_version != kFormatVersion)
    return make_error(ErrorCode::kUnsupported, "header: format version {} is not supported (this build reads version {})",
                      header.format_version, kFormatVersion);
  if (header.flags != 0)
    return make_error(ErrorCode::kUnsupported, "header: unknown flags 0x{:x}", header.flags);
  if (header.flatbuffer_offset < kHeaderBytes || header.flatbuffer_offset % kFlatbufferAlignment != 0)
    return make_error(ErrorCode::kCorrupt, "header: flatbuffer offset {} is not a multiple of {} at or after the header",
                      header.flatbuffer_offset, kFlatbufferAlignment);
  if (header.flatbuffer_offset > size || header.flatbuffer_size > size - header.flatbuffer_offset)
    return make_error(ErrorCode::kOutOfRange,
                      "header: flatbuffer [{}, {}+{}) ends past the end of the file ({} bytes; truncated?)",
                      header.flatbuffer_offset, header.flatbuffer_offset, header.flatbuffer_size, size);
  const uint64_t flatbuffer_end = header.flatbuffer_offset + header.flatbuffer_size;
  if (header.data_offset < flatbuffer_end || header.data_offset % kSegmentAlignment != 0)
    return make_error(ErrorCode::kCorrupt,
                      "header: data offset {} is not a multiple of {} at or after the flatbuffer end ({})",
                      header.data_offset, kSegmentAlignment, flatbuffer_end);
  if (header.data_offset > size || header.data_size > size - header.data_offset)
    return make_error(ErrorCode::kOutOfRange, "header: data area [{}, {}+{}) ends past the end of the file ({} bytes; truncated?)",
                      header.data_offset, header.data_offset, header.data_size, size);
  if (header.data_offset + header.data_size != size)
    return make_error(ErrorCode::kCorrupt, "header: the file has {} bytes after the data area [{}, {}+{})",
                      size - header.data_offset - header.data_size, header.data_offset, header.data_offset,
                      header.data_size);
  return header;
}

}  // namespace format

namespace {

Error corrupt(std::string message) { return Error(ErrorCode::kCorrupt, std::move(message)); }

// The verifier checks only that a vector's length field is 4-byte aligned; elements of 8 bytes
// must be 8-byte aligned before they are read (an empty vector has nothing to read).
template <typename V>
Status check_vector_alignment(const V* vector, size_t alignment, const std::string& what) {
  if (vector != nullptr && vector->size() > 0 && reinterpret_cast<uintptr_t>(vector->Data()) % alignment != 0)
    return corrupt(fmt::format("{}: vector is not {}-byte aligned", what, alignment));
  return ok_status();
}

std::string str(const flatbuffers::String* s) { return s == nullptr ? std::string() : s->str(); }

template <typename T>
std::vector<T> to_vector(const flatbuffers::Vector<T>* v) {
  if (v == nullptr) return {};
  return std::vector<T>(v->begin(), v->end());
}

Result<std::vector<int64_t>> int_list(const flatbuffers::Vector<int64_t>* v, const std::string& what) {
  KESTREL_RETURN_IF_ERROR(check_vector_alignment(v, 8, what));
  return to_vector(v);
}

Result<MetaValue> decode_meta_value(const fb::MetaEntry& entry, const std::string& what) {
  switch (entry.value_type()) {
    case fb::MetaValue::IntValue:
      if (const auto* v = entry.value_as_IntValue()) return MetaValue(v->value());
      break;
    case fb::MetaValue::DoubleValue:
      if (const auto* v = entry.value_as_DoubleValue()) return MetaValue(v->value());
      break;
    case fb::MetaValue::BoolValue:
      if (const auto* v = entry.value_as_BoolValue()) return MetaValue(v->value());
      break;
    case fb::MetaValue::StringValue:
      if (const auto* v = entry.value_as_StringValue()) return MetaValue(str(v->value()));
      break;
    case fb::MetaValue::IntList:
      if (const auto* v = entry.value_as_IntList()) {
        KESTREL_ASSIGN_OR_RETURN(auto list, int_list(v->values(), what));
        return MetaValue(std::move(list));
      }
      break;
    case fb::MetaValue::StringList:
      if (const auto* v = entry.value_as_StringList()) {
        std::vector<std::string> list;
        for (const auto* s : *v->values()) list.push_back(str(s));
        return MetaValue(std::move(list));
      }
      break;
    default:
      return corrupt(fmt::format("{}: unknown value type {}", what, static_cast<unsigned>(entry.value_type())));
  }
  return corrupt(fmt::format("{}: missing value", what));
}

Result<AttrValue> decode_attr_value(const fb::Attr& attr, const std::string& what) {
  switch (attr.value_type()) {
    case fb::AttrValue::IntValue:
      if (const auto* v = attr.value_as_IntValue()) return AttrValue(v->value());
      break;
    case fb::AttrValue::DoubleValue:
      if (const auto* v = attr.value_as_DoubleValue()) return AttrValue(v->value());
      break;
    case fb::AttrValue::StringValue:
      if (const auto* v = attr.value_as_StringValue()) return AttrValue(str(v->value()));
      break;
    case fb::AttrValue::IntList:
      if (const auto* v = attr.value_as_IntList()) {
        KESTREL_ASSIGN_OR_RETURN(auto list, int_list(v->values(), what));
        return AttrValue(std::move(list));
      }
      break;
    case fb::AttrValue::DoubleList:
      if (const auto* v = attr.value_as_DoubleList()) {
        KESTREL_RETURN_IF_ERROR(check_vector_alignment(v->values(), 8, what));
        return AttrValue(to_vector(v->values()));
      }
      break;
    default:
      return corrupt(fmt::format("{}: unknown value type {}", what, static_cast<unsigned>(attr.value_type())));
  }
  return corrupt(fmt::format("{}: missing value", what));
}

Result<ValueSpec> decode_value(const fb::Value& value, const std::string& what) {
  ValueSpec spec;
  spec.name = str(value.name());
  if (!dtype_is_valid(value.dtype())) return corrupt(fmt::format("{}: invalid dtype {}", what, value.dtype()));
  spec.dtype = static_cast<DType>(value.dtype());
  if (value.kind() > format::kMaxValueKind) return corrupt(fmt::format("{}: unknown value kind {}", what, value.kind()));
  spec.kind = static_cast<ValueKind>(value.kind());
  KESTREL_ASSIGN_OR_RETURN(spec.shape, int_list(value.shape(), what + ": shape"));
  if (const auto* ref = value.constant()) spec.constant = {ref->segment(), ref->offset(), ref->nbytes()};
  spec.arena_offset = value.arena_offset();
  spec.alias_of = value.alias_of();
  return spec;
}

Result<Attrs> decode_attrs(const flatbuffers::Vector<flatbuffers::Offset<fb::Attr>>* attrs, const std::string& what) {
  Attrs result;
  if (attrs == nullptr) return result;
  for (const auto* attr : *attrs) {
    const std::string key = str(attr->key());
    const std::string attr_what = fmt::format("{}, attr '{}'", what, key);
    KESTREL_ASSIGN_OR_RETURN(auto value, decode_attr_value(*attr, attr_what));
    if (!result.emplace(key, std::move(value)).second) return corrupt(fmt::format("{}: key appears twice", attr_what));
  }
  return result;
}

Result<Instruction> decode_instruction(const fb::Instruction& instruction, const std::string& what) {
  switch (instruction.call_type()) {
    case fb::Call::KernelCall:
      if (const auto* call = instruction.call_as_KernelCall()) {
        KernelCall result;
        result.op = str(call->op());
        result.inputs = to_vector(call->inputs());
        result.outputs = to_vector(call->outputs());
        KESTREL_ASSIGN_OR_RETURN(result.attrs, decode_attrs(call->attrs(), fmt::format("{} (kernel '{}')", what, result.op)));
        return Instruction(std::move(result));
      }
      break;
    case fb::Call::DelegateCall:
      if (const auto* call = instruction.call_as_DelegateCall()) {
        DelegateCall result;
        result.delegate = call->delegate();
        result.inputs = to_vector(call->inputs());
        result.outputs = to_vector(call->outputs());
        return Instruction(std::move(result));
      }
      break;
    default:
      return corrupt(fmt::format("{}: unknown instruction type {}", what, static_cast<unsigned>(instruction.call_type())));
  }
  return corrupt(fmt::format("{}: missing call", what));
}

Result<MethodSpec> decode_method(const fb::Method& method) {
  MethodSpec spec;
  spec.name = str(method.name());
  if (const auto* values = method.values()) {
    spec.values.reserve(values->size());
    for (uint32_t i = 0; i < values->size(); ++i) {
      const auto* value = values->Get(i);
      KESTREL_ASSIGN_OR_RETURN(auto decoded,
                               decode_value(*value, fmt::format("method '{}', value {} '{}'", spec.name, i, str(value->name()))));
      spec.values.push_back(std::move(decoded));
    }
  }
  spec.inputs = to_vector(method.inputs());
  spec.outputs = to_vector(method.outputs());
  if (const auto* instructions = method.instructions()) {
    spec.instructions.reserve(instructions->size());
    for (uint32_t i = 0; i < instructions->size(); ++i) {
      KESTREL_ASSIGN_OR_RETURN(auto decoded, decode_instruction(*instructions->Get(i),
                                                                fmt::format("method '{}', instruction {}", spec.name, i)));
      spec.instructions.push_back(std::move(decoded));
    }
  }
  spec.arena_bytes = method.arena_bytes();
  return spec;
}

Result<DelegateSpec> decode_delegate(const fb::Delegate& delegate, size_t index) {
  DelegateSpec spec;
  spec.backend_id = str(delegate.backend_id());
  spec.payload_segment = delegate.payload_segment();
  if (const auto* specs = delegate.compile_specs()) {
    for (const auto* entry : *specs) {
      const std::string key = str(entry->key());
      if (!spec.compile_specs.emplace(key, to_vector(entry->value())).second)
        return corrupt(fmt::format("delegate {} ('{}'): compile spec '{}' appears twice", index, spec.backend_id, key));
    }
  }
  return spec;
}

struct Decoded {
  ProgramSpec spec;
  std::vector<format::SegmentRange> segments;
};

std::string hex(uint64_t value) { return fmt::format("{:016x}", value); }

Status verify_description_checksum(const uint8_t* data, const format::Header& header) {
  const uint64_t actual = format::checksum({data + header.flatbuffer_offset, static_cast<size_t>(header.flatbuffer_size)});
  if (actual != header.flatbuffer_checksum)
    return corrupt(fmt::format("description (flatbuffer [{}, {}+{})): {} checksum mismatch: the header records {}, "
                               "the bytes hash to {}; the file is damaged",
                               header.flatbuffer_offset, header.flatbuffer_offset, header.flatbuffer_size,
                               format::kChecksumName, hex(header.flatbuffer_checksum), hex(actual)));
  return ok_status();
}

Result<Decoded> decode_flatbuffer(const uint8_t* data, const format::Header& header, bool verify_checksum) {
  const uint8_t* fb_data = data + header.flatbuffer_offset;
  // A root offset, the identifier, a table offset and a vtable, at the least.
  constexpr uint64_t kMinSize = 2 * sizeof(flatbuffers::uoffset_t) + sizeof(flatbuffers::soffset_t) + 4;
  constexpr uint64_t kMaxSize = FLATBUFFERS_MAX_BUFFER_SIZE;
  if (header.flatbuffer_size < kMinSize || header.flatbuffer_size >= kMaxSize)
    return corrupt(fmt::format("flatbuffer: size {} is outside [{}, {})", header.flatbuffer_size, kMinSize, kMaxSize));
  if (verify_checksum) KESTREL_RETURN_IF_ERROR(verify_description_checksum(data, header));
  if (reinterpret_cast<uintptr_t>(fb_data) % format::kFlatbufferAlignment != 0)
    return Error(ErrorCode::kInternal, "flatbuffer: the buffer is not 8-byte aligned in memory");
  if (!flatbuffers::BufferHasIdentifier(fb_data, format::kFlatbufferIdentifier))
    return corrupt(fmt::format("flatbuffer: identifier is not \"{}\"", format::kFlatbufferIdentifier));
  flatbuffers::Verifier verifier(fb_data, static_cast<size_t>(header.flatbuffer_size));
  if (!fb::VerifyProgramBuffer(verifier))
    return corrupt(fmt::format("flatbuffer [{}, {}+{}) failed verification: the program description is damaged",
                               header.flatbuffer_offset, header.flatbuffer_offset, header.flatbuffer_size));
  const fb::Program* root = fb::GetProgram(fb_data);

  Decoded decoded;
  ProgramSpec& spec = decoded.spec;
  spec.version = root->version();

  if (const auto* segments = root->segments()) {
    KESTREL_RETURN_IF_ERROR(check_vector_alignment(segments, 8, "segment table"));
    for (uint32_t i = 0; i < segments->size(); ++i) {
      const auto* segment = segments->Get(i);
      const uint64_t offset = segment->offset(), size = segment->size();
      if (offset % kSegmentAlignment != 0)
        return corrupt(fmt::format("segment table: segment {} offset {} is not a multiple of {}", i, offset,
                                   kSegmentAlignment));
      if (offset > header.data_size || size > header.data_size - offset)
        return make_error(ErrorCode::kOutOfRange,
                          "segment table: segment {} [{}, {}+{}) is outside the data area ({} bytes)", i, offset, offset,
                          size, header.data_size);
      decoded.segments.push_back({offset, size, segment->checksum()});
    }
  }

  if (const auto* metadata = root->metadata()) {
    for (const auto* entry : *metadata) {
      const std::string key = str(entry->key());
      const std::string what = fmt::format("metadata '{}'", key);
      KESTREL_ASSIGN_OR_RETURN(auto value, decode_meta_value(*entry, what));
      if (!spec.metadata.emplace(key, std::move(value)).second) return corrupt(what + ": key appears twice");
    }
  }
  if (const auto* methods = root->methods()) {
    for (uint32_t i = 0; i < methods->size(); ++i) {
      KESTREL_ASSIGN_OR_RETURN(auto method, decode_method(*methods->Get(i)));
      spec.methods.push_back(std::move(method));
    }
  }
  if (const auto* delegates = root->delegates()) {
    for (uint32_t i = 0; i < delegates->size(); ++i) {
      KESTREL_ASSIGN_OR_RETURN(auto delegate, decode_delegate(*delegates->Get(i), i));
      spec.delegates.push_back(std::move(delegate));
    }
  }
  return decoded;
}

Status verify_segment_checksums(const uint8_t* data, const format::Header& header, const Decoded& decoded) {
  for (size_t i = 0; i < decoded.segments.size(); ++i) {
    const format::SegmentRange& range = decoded.segments[i];
    const uint64_t actual = format::checksum({data + header.data_offset + range.offset, static_cast<size_t>(range.size)});
    if (actual != range.checksum)
      return corrupt(fmt::format("segment {} ({}), data bytes [{}, {}+{}): {} checksum mismatch: the segment table "
                                 "records {}, the bytes hash to {}; the file is damaged",
                                 i, segment_role(decoded.spec, static_cast<uint32_t>(i)), range.offset, range.offset,
                                 range.size, format::kChecksumName, hex(range.checksum), hex(actual)));
  }
  return ok_status();
}

}  // namespace

// Builds a LoadedProgram over bytes that already live at their final, 64-byte aligned address.
class ProgramLoader {
 public:
  // Takes ownership of `mapping` (munmap) or `owned` (free) even on failure.
  static Result<std::shared_ptr<const LoadedProgram>> load(const uint8_t* base, uint64_t size, void* mapping,
                                                           uint8_t* owned, const LoadOptions& options) {
    std::unique_ptr<LoadedProgram> program(new (std::nothrow) LoadedProgram());
    if (program == nullptr) {
      if (mapping != nullptr) ::munmap(mapping, size);
      std::free(owned);
      return make_error(ErrorCode::kCapacity, "out of memory");
    }
    program->base_ = base;
    program->size_ = size;
    program->mapping_ = mapping;
    program->owned_copy_ = owned;
    KESTREL_RETURN_IF_ERROR(verify(*program, options));
    return std::shared_ptr<const LoadedProgram>(std::move(program));
  }

 private:
  static Status verify(LoadedProgram& program, const LoadOptions& options) {
    const std::span<const uint8_t> bytes(program.base_, program.size_);
    KESTREL_ASSIGN_OR_RETURN(auto header, format::decode_header(bytes));
    KESTREL_ASSIGN_OR_RETURN(auto decoded, decode_flatbuffer(program.base_, header, options.verify_checksums));
    std::vector<uint64_t> sizes;
    for (const auto& range : decoded.segments) sizes.push_back(range.size);
    KESTREL_RETURN_IF_ERROR(validate_program(decoded.spec, sizes, ErrorCode::kCorrupt));
    if (options.verify_checksums) KESTREL_RETURN_IF_ERROR(verify_segment_checksums(program.base_, header, decoded));
    program.format_version_ = header.format_version;
    program.checksums_verified_ = options.verify_checksums;
    for (const auto& range : decoded.segments) {
      program.segments_.emplace_back(program.base_ + header.data_offset + range.offset, range.size);
      program.segment_checksums_.push_back(range.checksum);
    }
    program.spec_ = std::move(decoded.spec);
    return ok_status();
  }
};

namespace {

Result<std::shared_ptr<const LoadedProgram>> load_file_impl(const std::string& path, const LoadOptions& options) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return make_error(ErrorCode::kIo, "cannot open: {}", std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int error = errno;
    ::close(fd);
    return make_error(ErrorCode::kIo, "cannot stat: {}", std::strerror(error));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return make_error(ErrorCode::kIo, "not a regular file");
  }
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size == 0) {
    ::close(fd);
    return format::decode_header({}).error();
  }
  void* mapping = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  const int error = errno;
  ::close(fd);
  if (mapping == MAP_FAILED) return make_error(ErrorCode::kIo, "cannot map {} bytes: {}", size, std::strerror(error));
  return ProgramLoader::load(static_cast<const uint8_t*>(mapping), size, mapping, nullptr, options);
}

Result<std::shared_ptr<const LoadedProgram>> load_bytes_impl(std::span<const uint8_t> bytes, const LoadOptions& options) {
  if (bytes.empty()) return format::decode_header({}).error();
  const size_t rounded = (bytes.size() + kSegmentAlignment - 1) / kSegmentAlignment * kSegmentAlignment;
  auto* copy = static_cast<uint8_t*>(std::aligned_alloc(kSegmentAlignment, rounded));
  if (copy == nullptr) return make_error(ErrorCode::kCapacity, "cannot allocate {} bytes for the program", rounded);
  std::memcpy(copy, bytes.data(), bytes.size());
  std::memset(copy + bytes.size(), 0, rounded - bytes.size());
  return ProgramLoader::load(copy, bytes.size(), nullptr, copy, options);
}

template <typename F>
Result<std::shared_ptr<const LoadedProgram>> guarded(const std::string& context, F&& f) {
  try {
    auto result = f();
    if (!result.ok()) return result.error().with_context(context);
    return result;
  } catch (const std::bad_alloc&) {
    return make_error(ErrorCode::kCapacity, "{}: out of memory", context);
  } catch (const std::exception& e) {
    return make_error(ErrorCode::kInternal, "{}: {}", context, e.what());
  }
}

}  // namespace

Result<std::shared_ptr<const LoadedProgram>> LoadedProgram::load_file(const std::string& path,
                                                                       const LoadOptions& options) {
  return guarded(fmt::format("program file '{}'", path), [&] { return load_file_impl(path, options); });
}

Result<std::shared_ptr<const LoadedProgram>> LoadedProgram::load_bytes(std::span<const uint8_t> bytes,
                                                                        const LoadOptions& options) {
  return guarded(fmt::format("program bytes ({} bytes)", bytes.size()),
                 [&] { return load_bytes_impl(bytes, options); });
}

LoadedProgram::~LoadedProgram() {
  if (mapping_ != nullptr) ::munmap(mapping_, size_);
  std::free(owned_copy_);
}

std::span<const uint8_t> LoadedProgram::constant_bytes(const ValueSpec& value) const {
  if (value.kind != ValueKind::kConstant || value.constant.segment >= segments_.size()) return {};
  const auto segment = segments_[value.constant.segment];
  if (value.constant.offset > segment.size() || value.constant.nbytes > segment.size() - value.constant.offset)
    return {};
  return segment.subspan(value.constant.offset, value.constant.nbytes);
}

const MethodSpec* LoadedProgram::find_method(std::string_view name) const {
  for (const auto& method : spec_.methods)
    if (method.name == name) return &method;
  return nullptr;
}

}  // namespace kestrel::program

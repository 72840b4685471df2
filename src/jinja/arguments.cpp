#include "jinja/builtins.h"
#include "kestrel/core/error_helpers.h"

namespace kestrel::jinja {

Result<std::vector<std::optional<Value>>> bind_arguments(const std::string& function, CallArgs& args,
                                                         const std::vector<std::string_view>& parameters) {
  std::vector<std::optional<Value>> slots(parameters.size());
  if (args.positional.size() > parameters.size())
    return make_error(ErrorCode::kInvalidArgument, "{}() takes at most {} argument(s) ({} given)", function,
                      parameters.size(), args.positional.size());
  for (size_t i = 0; i < args.positional.size(); ++i) slots[i] = std::move(args.positional[i]);
  for (auto& [name, value] : args.keyword) {
    size_t index = parameters.size();
    for (size_t i = 0; i < parameters.size(); ++i)
      if (parameters[i] == name) index = i;
    if (index == parameters.size())
      return make_error(ErrorCode::kInvalidArgument, "{}() got an unexpected keyword argument '{}'", function, name);
    if (slots[index])
      return make_error(ErrorCode::kInvalidArgument, "{}() got multiple values for argument '{}'", function, name);
    slots[index] = std::move(value);
  }
  return slots;
}

}  // namespace kestrel::jinja

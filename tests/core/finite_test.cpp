#include "kestrel/core/finite.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

namespace kestrel {
namespace {

TEST(FirstNonFinite, FiniteExtremesPass) {
  using limits = std::numeric_limits<float>;
  const std::vector<float> values{0.0f, -0.0f, limits::max(), -limits::max(), limits::min(), limits::denorm_min(),
                                  -limits::denorm_min(), 1.0f, -3.5f};
  EXPECT_EQ(first_non_finite(values), -1);
  EXPECT_EQ(first_non_finite({}), -1);
}

TEST(FirstNonFinite, FindsTheFirstInfOrNanAtEveryPlace) {
  using limits = std::numeric_limits<float>;
  for (float bad : {limits::infinity(), -limits::infinity(), limits::quiet_NaN(), -limits::quiet_NaN()})
    for (size_t n : {1, 7, 16, 17, 64, 131})  // around the vector widths and their tails
      for (size_t at = 0; at < n; ++at) {
        std::vector<float> values(n);
        for (size_t i = 0; i < n; ++i) values[i] = static_cast<float>(i) * 0.25f - 3.0f;
        values[at] = bad;
        if (at + 2 < n) values[at + 2] = bad;  // a later one does not hide the first
        SCOPED_TRACE(testing::Message() << "value " << bad << " n " << n << " at " << at);
        EXPECT_EQ(first_non_finite(values), static_cast<int64_t>(at));
      }
}

}  // namespace
}  // namespace kestrel

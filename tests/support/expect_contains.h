// EXPECT_CONTAINS(text, part): a non-fatal failure printing `text` when `part` is not in it.
#pragma once

#include <gtest/gtest.h>

#include <string>

#define EXPECT_CONTAINS(haystack, needle)                                               \
  do {                                                                                  \
    const std::string h_ = (haystack);                                                  \
    EXPECT_NE(h_.find(needle), std::string::npos) << h_ << "\n  lacks: " << (needle); \
  } while (0)

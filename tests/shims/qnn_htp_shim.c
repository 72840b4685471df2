/* A stand-in for libQnnHtp.so: exports QnnInterface_getProviders (returning no provider) so the
 * tests can check what the QNN backend says when the library is present but this build has no
 * SDK-bound delegate. */
#include <stdint.h>

__attribute__((visibility("default"))) uint64_t QnnInterface_getProviders(const void*** providers,
                                                                          uint32_t* count) {
  if (providers) *providers = 0;
  if (count) *count = 0;
  return 1; /* not QNN_SUCCESS */
}

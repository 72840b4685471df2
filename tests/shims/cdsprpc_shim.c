/* A stand-in for libcdsprpc.so on hosts without a Hexagon DSP: rpcmem over the C heap, with
 * every call recorded in counters the tests read through cdsprpc_shim_get_counters().
 *
 * Environment (read on every call):
 *   CDSPRPC_SHIM_FAIL=1     allocations return NULL
 *   CDSPRPC_SHIM_ALIGNED=1  allocations are page aligned (default: 64 bytes past a page, so a
 *                           caller that needs page alignment has to pad)
 * Build variants: CDSPRPC_SHIM_NO_ALLOC2 leaves out rpcmem_alloc2 (legacy int-size API);
 * CDSPRPC_SHIM_NO_TO_FD leaves out rpcmem_to_fd (a broken library). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define SHIM_EXPORT __attribute__((visibility("default")))
#define SHIM_MAX_LIVE 4096
#define SHIM_PAGE 4096

struct cdsprpc_shim_counters {
  long alloc_calls;   /* rpcmem_alloc */
  long alloc2_calls;  /* rpcmem_alloc2 */
  long free_calls;
  long bad_frees;     /* rpcmem_free of a pointer the shim did not return */
  long to_fd_calls;
  long failed_allocs;
  long live;          /* allocations not yet freed */
  int last_heap_id;
  uint32_t last_flags;
  uint64_t last_size;
  long heap_id_mismatches; /* allocations whose heap id was not 25 */
  long flags_mismatches;   /* allocations whose flags were not 1 */
};

static struct cdsprpc_shim_counters counters;
static struct {
  void* user;
  void* raw;
} live_table[SHIM_MAX_LIVE];

SHIM_EXPORT const struct cdsprpc_shim_counters* cdsprpc_shim_get_counters(void) { return &counters; }

SHIM_EXPORT void cdsprpc_shim_reset(void) {
  /* Live allocations stay tracked so a later free still matches. */
  long live = counters.live;
  memset(&counters, 0, sizeof(counters));
  counters.live = live;
}

static int env_set(const char* name) {
  const char* v = getenv(name);
  return v != NULL && v[0] == '1';
}

static void* shim_alloc(int heap_id, uint32_t flags, uint64_t size) {
  counters.last_heap_id = heap_id;
  counters.last_flags = flags;
  counters.last_size = size;
  if (heap_id != 25) counters.heap_id_mismatches++;
  if (flags != 1) counters.flags_mismatches++;
  if (env_set("CDSPRPC_SHIM_FAIL") || size == 0) {
    counters.failed_allocs++;
    return NULL;
  }
  int slot = -1;
  for (int i = 0; i < SHIM_MAX_LIVE; ++i) {
    if (live_table[i].user == NULL) {
      slot = i;
      break;
    }
  }
  if (slot < 0) {
    counters.failed_allocs++;
    return NULL;
  }
  const size_t extra = env_set("CDSPRPC_SHIM_ALIGNED") ? 0 : 64;
  void* raw = aligned_alloc(SHIM_PAGE, ((size + extra + SHIM_PAGE - 1) / SHIM_PAGE) * SHIM_PAGE);
  if (raw == NULL) {
    counters.failed_allocs++;
    return NULL;
  }
  live_table[slot].raw = raw;
  live_table[slot].user = (char*)raw + extra;
  counters.live++;
  return live_table[slot].user;
}

SHIM_EXPORT void* rpcmem_alloc(int heap_id, uint32_t flags, int size) {
  counters.alloc_calls++;
  if (size < 0) {
    counters.failed_allocs++;
    return NULL;
  }
  return shim_alloc(heap_id, flags, (uint64_t)size);
}

#ifndef CDSPRPC_SHIM_NO_ALLOC2
SHIM_EXPORT void* rpcmem_alloc2(int heap_id, uint32_t flags, size_t size) {
  counters.alloc2_calls++;
  return shim_alloc(heap_id, flags, (uint64_t)size);
}
#endif

SHIM_EXPORT void rpcmem_free(void* pointer) {
  counters.free_calls++;
  for (int i = 0; i < SHIM_MAX_LIVE; ++i) {
    if (pointer != NULL && live_table[i].user == pointer) {
      free(live_table[i].raw);
      live_table[i].user = NULL;
      live_table[i].raw = NULL;
      counters.live--;
      return;
    }
  }
  counters.bad_frees++;
}

#ifndef CDSPRPC_SHIM_NO_TO_FD
SHIM_EXPORT int rpcmem_to_fd(void* pointer) {
  counters.to_fd_calls++;
  for (int i = 0; i < SHIM_MAX_LIVE; ++i) {
    if (pointer != NULL && live_table[i].user == pointer) return 100 + i;
  }
  return -1;
}
#endif

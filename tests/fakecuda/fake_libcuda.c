/* A fake libcuda for CPU tests of the generated launcher.

   It exports the driver calls the launcher resolves (cuLaunchKernelEx,
   cuPointerGetAttribute) and records every launch: grid, block, shared
   bytes, stream, function, each attribute and the bytes of each parameter.
   cuLaunchKernelEx cannot know the parameter sizes, so the test states them
   with fake_set_param_sizes(). The fake_* functions are driven through ctypes
   by tests/fakecuda/__init__.py. */
#include <stdint.h>
#include <string.h>

#include "cuda.h"

#define MAX_LAUNCHES 64
#define MAX_PARAMS 64
#define MAX_PARAM_BYTES 4096
#define MAX_ATTRS 8
#define MAX_RULES 8

typedef struct {
  uint64_t function;
  uint64_t stream;
  uint32_t grid[3];
  uint32_t block[3];
  uint32_t shared;
  uint32_t num_attrs;
  uint32_t attr_id[MAX_ATTRS];
  uint8_t attr_value[MAX_ATTRS][16]; /* the first bytes of CUlaunchAttributeValue */
  uint32_t num_params;
  uint32_t param_offset[MAX_PARAMS]; /* where parameter j starts in param_bytes */
  uint32_t param_address_mod64[MAX_PARAMS]; /* alignment of what params[j] points to */
  uint8_t param_bytes[MAX_PARAM_BYTES];
} FakeLaunch;

/* cuPointerGetAttribute answers `result` for addresses in [lo, hi), and on
   success gives address + delta as the device pointer. */
typedef struct {
  uint64_t lo, hi;
  int result;
  int64_t delta;
} PointerRule;

static FakeLaunch launches[MAX_LAUNCHES]; /* the first ones; later launches are only counted */
static int num_launches;
static uint32_t param_sizes[MAX_PARAMS];
static int num_param_sizes;
static PointerRule rules[MAX_RULES];
static int num_rules;
static int pointer_calls;
static CUresult failing_result; /* what the failing launch returns */
static int launches_before_failure; /* successful launches left before it; -1: none fails */

void fake_reset(void) {
  num_launches = 0;
  num_param_sizes = 0;
  num_rules = 0;
  pointer_calls = 0;
  launches_before_failure = -1;
}

int fake_set_param_sizes(int n, const uint32_t *sizes) {
  uint32_t total = 0;
  for (int j = 0; j < n; j++)
    total += sizes[j];
  if (n > MAX_PARAMS || total > MAX_PARAM_BYTES)
    return -1;
  memcpy(param_sizes, sizes, n * sizeof *sizes);
  num_param_sizes = n;
  return 0;
}

int fake_add_pointer_rule(uint64_t lo, uint64_t hi, int result, int64_t delta) {
  if (num_rules == MAX_RULES)
    return -1;
  rules[num_rules++] = (PointerRule){lo, hi, result, delta};
  return 0;
}

/* After `after` more successful launches, the next one returns `result` (once). */
void fake_fail_launch(int after, int result) {
  launches_before_failure = after;
  failing_result = (CUresult)result;
}
int fake_pointer_calls(void) { return pointer_calls; }
int fake_launch_count(void) { return num_launches; }
const FakeLaunch *fake_launch(int i) {
  return i >= 0 && i < num_launches && i < MAX_LAUNCHES ? &launches[i] : NULL;
}

CUresult cuPointerGetAttribute(void *data, CUpointer_attribute attribute, CUdeviceptr ptr) {
  pointer_calls++;
  if (attribute != CU_POINTER_ATTRIBUTE_DEVICE_POINTER)
    return CUDA_ERROR_NOT_SUPPORTED;
  int64_t delta = 0;
  for (int i = 0; i < num_rules; i++) {
    if (rules[i].lo <= ptr && ptr < rules[i].hi) {
      if (rules[i].result != CUDA_SUCCESS)
        return (CUresult)rules[i].result;
      delta = rules[i].delta;
      break;
    }
  }
  *(CUdeviceptr *)data = ptr + (CUdeviceptr)delta;
  return CUDA_SUCCESS;
}

CUresult cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f, void **params,
                          void **extra) {
  if (launches_before_failure >= 0 && launches_before_failure-- == 0)
    return failing_result;
  if (config->numAttrs > MAX_ATTRS || extra != NULL)
    return CUDA_ERROR_INVALID_VALUE;
  if (num_launches++ >= MAX_LAUNCHES)
    return CUDA_SUCCESS;
  FakeLaunch *l = &launches[num_launches - 1];
  memset(l, 0, sizeof *l);
  l->function = (uint64_t)(uintptr_t)f;
  l->stream = (uint64_t)(uintptr_t)config->hStream;
  l->grid[0] = config->gridDimX;
  l->grid[1] = config->gridDimY;
  l->grid[2] = config->gridDimZ;
  l->block[0] = config->blockDimX;
  l->block[1] = config->blockDimY;
  l->block[2] = config->blockDimZ;
  l->shared = config->sharedMemBytes;
  l->num_attrs = config->numAttrs;
  for (unsigned int i = 0; i < config->numAttrs; i++) {
    l->attr_id[i] = (uint32_t)config->attrs[i].id;
    memcpy(l->attr_value[i], &config->attrs[i].value, sizeof l->attr_value[i]);
  }
  uint32_t offset = 0;
  l->num_params = (uint32_t)num_param_sizes;
  for (int j = 0; j < num_param_sizes; j++) {
    l->param_offset[j] = offset;
    l->param_address_mod64[j] = (uint32_t)((uintptr_t)params[j] % 64);
    memcpy(l->param_bytes + offset, params[j], param_sizes[j]);
    offset += param_sizes[j];
  }
  return CUDA_SUCCESS;
}

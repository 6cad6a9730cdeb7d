/* A fake libcuda for CPU tests of the generated launcher.

   It exports the driver calls the launcher resolves (cuLaunchKernelEx,
   cuPointerGetAttribute) and records every launch: grid, block, shared
   bytes, stream, function, each attribute and the bytes of each parameter.
   cuLaunchKernelEx cannot know the parameter sizes, so the test states them
   with fake_set_param_sizes(). The fake_* functions are driven through ctypes
   by tests/fakecuda/__init__.py.

   It also answers the rest of what a reproducer (`cubinrun repro`) calls,
   with host memory as device memory, so a repro runs against it in another
   process: there $FAKECUDA_PARAM_SIZES (e.g. "8,8,8,4") gives the parameter
   sizes, every launch record is appended to $FAKECUDA_RECORD and every
   allocation ("address size" lines) to $FAKECUDA_ALLOCATIONS.

   For the timers: stream capture and graphs (cuStreamBeginCapture ..
   cuGraphLaunch; the fake device forwards cuda.bindings' calls of them here,
   where the launches are), and the clock probe (the function handle
   CLOCK_FUNCTION), which reports the clocks fake_set_clocks() gives. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda.h"

#ifdef _WIN32 /* msvcrt and the UCRT have no aligned_alloc: their own pair instead */
#include <malloc.h>
#if defined(__TINYC__) && __TINYC__ < 928 /* TinyCC 0.9.27's malloc.h leaves them out */
void *__cdecl _aligned_malloc(size_t size, size_t alignment);
void __cdecl _aligned_free(void *memory);
#endif
#define aligned_alloc(alignment, size) _aligned_malloc((size), (alignment))
#define aligned_free _aligned_free
#else
#define aligned_free free
#endif

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
static int launches_before_failure = -1; /* successful launches left before it; -1: none */

/* Stream capture and graphs (the graph timer): while a stream captures, its
   launches are counted into the graph, not run; a graph launch then counts as
   that many launches. */
#define CLOCK_FUNCTION 0xC10Cu /* what the fake device hands out for cubinrun_clock */
#define MAX_CLOCKS 64
static CUstream capturing;       /* the stream being captured; NULL: none */
static int captured;             /* launches captured so far */
static int graphs_live;          /* graphs and executable graphs not yet destroyed */
static double clocks_mhz[MAX_CLOCKS] = {1980.0};
static int num_clocks = 1;
static int clock_probes;

void fake_reset(void) {
  num_launches = 0;
  capturing = NULL;
  captured = 0;
  graphs_live = 0;
  clocks_mhz[0] = 1980.0;
  num_clocks = 1;
  clock_probes = 0;
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
int fake_graphs_live(void) { return graphs_live; }
int fake_capturing(void) { return capturing != NULL; }

/* The SM clocks successive clock probes report, cycled. */
int fake_set_clocks(int n, const double *mhz) {
  if (n < 1 || n > MAX_CLOCKS)
    return -1;
  memcpy(clocks_mhz, mhz, n * sizeof *mhz);
  num_clocks = n;
  clock_probes = 0;
  return 0;
}
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

static void sizes_from_environment(void) {
  const char *text = getenv("FAKECUDA_PARAM_SIZES");
  while (text && *text && num_param_sizes < MAX_PARAMS) {
    char *end;
    param_sizes[num_param_sizes++] = (uint32_t)strtoul(text, &end, 10);
    text = *end == ',' ? end + 1 : NULL;
  }
}

static void append_record(const char *variable, const void *data, size_t n) {
  const char *path = getenv(variable);
  FILE *f = path ? fopen(path, "ab") : NULL;
  if (f) {
    fwrite(data, 1, n, f);
    fclose(f);
  }
}

CUresult cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f, void **params,
                          void **extra) {
  if (num_param_sizes == 0)
    sizes_from_environment();
  if (launches_before_failure >= 0 && launches_before_failure-- == 0)
    return failing_result;
  if (config->numAttrs > MAX_ATTRS || extra != NULL)
    return CUDA_ERROR_INVALID_VALUE;
  if (capturing != NULL && config->hStream == capturing) {
    captured++;
    return CUDA_SUCCESS;
  }
  if ((uintptr_t)f == CLOCK_FUNCTION) { /* the probe writes {ns, cycles}: 2 us at the clock */
    uint64_t *record = *(uint64_t **)params[0];
    double mhz = clocks_mhz[clock_probes++ % num_clocks];
    record[0] = 2000;
    record[1] = (uint64_t)(2000.0 * mhz / 1000.0 + 0.5);
  }
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
  append_record("FAKECUDA_RECORD", l, sizeof *l);
  return CUDA_SUCCESS;
}

/* ---- the rest of a reproducer's calls: host memory as device memory ------ */

CUresult cuInit(unsigned int flags) { return flags ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS; }
CUresult cuDeviceGet(CUdevice *device, int ordinal) {
  *device = ordinal;
  return ordinal == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}
CUresult cuDevicePrimaryCtxRetain(CUcontext *context, CUdevice device) {
  *context = (CUcontext)(uintptr_t)0xC0;
  return CUDA_SUCCESS;
}
CUresult cuCtxSetCurrent(CUcontext context) { return CUDA_SUCCESS; }
CUresult cuModuleLoadData(CUmodule *module, const void *image) {
  *module = (CUmodule)(uintptr_t)0x7;
  return memcmp(image, "\x7f" "ELF", 4) == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_IMAGE;
}
CUresult cuModuleGetFunction(CUfunction *function, CUmodule module, const char *name) {
  *function = (CUfunction)(uintptr_t)0xF00D;
  return CUDA_SUCCESS;
}
/* Module globals: any name is a global of 64 KiB (the constant bank's size),
   up to MAX_GLOBALS names; each lookup is appended to $FAKECUDA_GLOBALS
   ("name address" lines). */
#define MAX_GLOBALS 8
static struct { char name[64]; unsigned char bytes[65536]; } fake_globals[MAX_GLOBALS];
CUresult cuModuleGetGlobal_v2(CUdeviceptr *pointer, size_t *size, CUmodule module,
                              const char *name) {
  for (int i = 0; i < MAX_GLOBALS; i++) {
    if (fake_globals[i].name[0] == 0)
      snprintf(fake_globals[i].name, sizeof fake_globals[i].name, "%s", name);
    if (strcmp(fake_globals[i].name, name) == 0) {
      *pointer = (CUdeviceptr)(uintptr_t)fake_globals[i].bytes;
      *size = sizeof fake_globals[i].bytes;
      char line[96];
      int n = snprintf(line, sizeof line, "%s %llu\n", name, (unsigned long long)*pointer);
      append_record("FAKECUDA_GLOBALS", line, (size_t)n);
      return CUDA_SUCCESS;
    }
  }
  return CUDA_ERROR_NOT_FOUND;
}
CUresult cuFuncGetAttribute(int *value, CUfunction_attribute attribute, CUfunction function) {
  *value = 0;
  return CUDA_SUCCESS;
}
CUresult cuFuncSetAttribute(CUfunction function, CUfunction_attribute attribute, int value) {
  return CUDA_SUCCESS;
}
CUresult cuMemAlloc(CUdeviceptr *pointer, size_t nbytes) {
  void *memory = aligned_alloc(256, (nbytes + 255) / 256 * 256);
  if (!memory)
    return CUDA_ERROR_OUT_OF_MEMORY;
  *pointer = (CUdeviceptr)(uintptr_t)memory;
  char line[64];
  int n = snprintf(line, sizeof line, "%llu %zu\n", (unsigned long long)*pointer, nbytes);
  append_record("FAKECUDA_ALLOCATIONS", line, (size_t)n);
  return CUDA_SUCCESS;
}
CUresult cuMemFree(CUdeviceptr pointer) {
  aligned_free((void *)(uintptr_t)pointer);
  return CUDA_SUCCESS;
}
CUresult cuMemcpyHtoD(CUdeviceptr dst, const void *src, size_t n) {
  memcpy((void *)(uintptr_t)dst, src, n);
  return CUDA_SUCCESS;
}
CUresult cuMemcpyDtoH(void *dst, CUdeviceptr src, size_t n) {
  memcpy(dst, (const void *)(uintptr_t)src, n);
  return CUDA_SUCCESS;
}
CUresult cuMemsetD8(CUdeviceptr dst, unsigned char value, size_t n) {
  memset((void *)(uintptr_t)dst, value, n);
  return CUDA_SUCCESS;
}
CUresult cuStreamCreate(CUstream *stream, unsigned int flags) {
  *stream = (CUstream)(uintptr_t)0x5;
  return CUDA_SUCCESS;
}
CUresult cuStreamSynchronize(CUstream stream) { return CUDA_SUCCESS; }
CUresult cuEventCreate(CUevent *event, unsigned int flags) {
  *event = (CUevent)(uintptr_t)0xE;
  return CUDA_SUCCESS;
}
CUresult cuEventRecord(CUevent event, CUstream stream) { return CUDA_SUCCESS; }
CUresult cuEventSynchronize(CUevent event) { return CUDA_SUCCESS; }
CUresult cuEventElapsedTime(float *ms, CUevent start, CUevent end) {
  *ms = 0.003f;
  return CUDA_SUCCESS;
}
CUresult cuGetErrorName(CUresult error, const char **name) {
  *name = error == CUDA_ERROR_INVALID_IMAGE ? "CUDA_ERROR_INVALID_IMAGE" : "CUDA_ERROR_FAKE";
  return CUDA_SUCCESS;
}

/* ---- stream capture and graphs ------------------------------------------- */

typedef struct {
  int launches;
} FakeGraph;

CUresult cuStreamBeginCapture(CUstream stream, CUstreamCaptureMode mode) {
  if (capturing != NULL)
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  capturing = stream;
  captured = 0;
  return CUDA_SUCCESS;
}

CUresult cuStreamEndCapture(CUstream stream, CUgraph *graph) {
  if (capturing == NULL || stream != capturing)
    return CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD;
  FakeGraph *g = malloc(sizeof *g);
  if (!g)
    return CUDA_ERROR_OUT_OF_MEMORY;
  g->launches = captured;
  capturing = NULL;
  graphs_live++;
  *graph = (CUgraph)g;
  return CUDA_SUCCESS;
}

CUresult cuGraphInstantiate(CUgraphExec *exec, CUgraph graph, unsigned long long flags) {
  FakeGraph *g = malloc(sizeof *g);
  if (!g)
    return CUDA_ERROR_OUT_OF_MEMORY;
  g->launches = ((FakeGraph *)graph)->launches;
  graphs_live++;
  *exec = (CUgraphExec)g;
  return CUDA_SUCCESS;
}

CUresult cuGraphLaunch(CUgraphExec exec, CUstream stream) {
  num_launches += ((FakeGraph *)exec)->launches; /* counted, not recorded */
  return CUDA_SUCCESS;
}

CUresult cuGraphExecDestroy(CUgraphExec exec) {
  free(exec);
  graphs_live--;
  return CUDA_SUCCESS;
}

CUresult cuGraphDestroy(CUgraph graph) {
  free(graph);
  graphs_live--;
  return CUDA_SUCCESS;
}

/* The floor for bench/launch/launch_overhead.py: launches of kernels/empty.cu from C.

   Built at run time into a shared library and driven through ctypes, so its
   repetitions interleave with the Python paths. Each launch does the work a
   real launcher must do: fill a CUlaunchConfig, copy every argument into its
   own storage and point kernelParams at it, call cuLaunchKernelEx. Nothing
   else: no Python, no argument conversion, no error check beyond the result.

   The driver is opened with dlopen, as Triton's launcher does, so this file
   compiles with only cuda.h and no libcuda. In one process dlopen returns the
   libcuda that cuda.bindings already loaded, so the module is loaded into the
   context current on the calling thread (the primary context). */
#define _POSIX_C_SOURCE 200809L /* clock_gettime under strict -std=c11 too */
#include <dlfcn.h>
#include <stdint.h>
#include <time.h>

#include "cuda.h"

typedef CUresult (*ModuleLoadData)(CUmodule *, const void *);
typedef CUresult (*ModuleGetFunction)(CUfunction *, CUmodule, const char *);
typedef CUresult (*LaunchKernelEx)(const CUlaunchConfig *, CUfunction, void **, void **);
typedef CUresult (*StreamSynchronize)(CUstream);

static ModuleLoadData module_load_data;
static ModuleGetFunction module_get_function;
static LaunchKernelEx launch_kernel_ex;
static StreamSynchronize stream_synchronize;

static CUfunction empty3_function, empty16_function;
static CUstream stream;
static unsigned int block_x = 32;

/* The argument values, as the caller gave them; copied per launch. */
static struct {
  CUdeviceptr x, y;
  int32_t n;
} args3;

static struct {
  CUdeviceptr a_ptr, b_ptr;
  int32_t n;
  int64_t offset;
  float alpha;
  double beta;
  uint8_t flags;
  uint16_t scale_fp16; /* raw fp16 bits */
  CUdeviceptr idx_ptr;
  uint32_t mask;
  int8_t is_last;      /* i1: one byte, as Triton passes it */
  int16_t stride;
  uint64_t seed;
  uint16_t scale_bf16; /* raw bf16 bits */
  int8_t shift;
  CUdeviceptr acc_ptr;
} args16;

static const char *last_error = "";

const char *floor_error(void) { return last_error; }

/* Opens the driver (`path`: "libcuda.so.1", or a stand-in) and resolves the
   four calls; 0 on success, else -1 with floor_error() saying why. */
int floor_open(const char *path) {
  void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    last_error = dlerror();
    return -1;
  }
  module_load_data = (ModuleLoadData)dlsym(lib, "cuModuleLoadData");
  module_get_function = (ModuleGetFunction)dlsym(lib, "cuModuleGetFunction");
  launch_kernel_ex = (LaunchKernelEx)dlsym(lib, "cuLaunchKernelEx");
  stream_synchronize = (StreamSynchronize)dlsym(lib, "cuStreamSynchronize");
  if (!module_load_data || !module_get_function || !launch_kernel_ex || !stream_synchronize) {
    last_error = "a driver symbol is missing (cuModuleLoadData, cuModuleGetFunction, "
                 "cuLaunchKernelEx or cuStreamSynchronize)";
    return -1;
  }
  return 0;
}

/* Loads the cubin image and finds both kernels; returns the CUresult. */
int floor_load(const void *image) {
  CUmodule module;
  CUresult r = module_load_data(&module, image);
  if (r == CUDA_SUCCESS)
    r = module_get_function(&empty3_function, module, "empty3");
  if (r == CUDA_SUCCESS)
    r = module_get_function(&empty16_function, module, "empty16");
  return (int)r;
}

void floor_set_launch(uint64_t stream_handle, unsigned int block) {
  stream = (CUstream)(uintptr_t)stream_handle;
  block_x = block;
}

void floor_set_empty3(uint64_t x, uint64_t y, int32_t n) {
  args3.x = x;
  args3.y = y;
  args3.n = n;
}

void floor_set_empty16(uint64_t a_ptr, uint64_t b_ptr, int32_t n, int64_t offset, float alpha,
                       double beta, uint8_t flags, uint16_t scale_fp16, uint64_t idx_ptr,
                       uint32_t mask, int8_t is_last, int16_t stride, uint64_t seed,
                       uint16_t scale_bf16, int8_t shift, uint64_t acc_ptr) {
  args16.a_ptr = a_ptr;
  args16.b_ptr = b_ptr;
  args16.n = n;
  args16.offset = offset;
  args16.alpha = alpha;
  args16.beta = beta;
  args16.flags = flags;
  args16.scale_fp16 = scale_fp16;
  args16.idx_ptr = idx_ptr;
  args16.mask = mask;
  args16.is_last = is_last;
  args16.stride = stride;
  args16.seed = seed;
  args16.scale_bf16 = scale_bf16;
  args16.shift = shift;
  args16.acc_ptr = acc_ptr;
}

/* The per-launch config: everything a launcher fills for each call. */
static inline void fill_config(CUlaunchConfig *config) {
  config->gridDimX = 1;
  config->gridDimY = 1;
  config->gridDimZ = 1;
  config->blockDimX = block_x;
  config->blockDimY = 1;
  config->blockDimZ = 1;
  config->sharedMemBytes = 0;
  config->hStream = stream;
  config->attrs = NULL;
  config->numAttrs = 0;
}

static CUresult launch_empty3(void) {
  CUlaunchConfig config;
  fill_config(&config);
  CUdeviceptr x = args3.x, y = args3.y;
  int32_t n = args3.n;
  void *params[] = {&x, &y, &n};
  return launch_kernel_ex(&config, empty3_function, params, NULL);
}

static CUresult launch_empty16(void) {
  CUlaunchConfig config;
  fill_config(&config);
  CUdeviceptr a_ptr = args16.a_ptr, b_ptr = args16.b_ptr, idx_ptr = args16.idx_ptr,
              acc_ptr = args16.acc_ptr;
  int32_t n = args16.n;
  int64_t offset = args16.offset;
  float alpha = args16.alpha;
  double beta = args16.beta;
  uint8_t flags = args16.flags;
  uint16_t scale_fp16 = args16.scale_fp16, scale_bf16 = args16.scale_bf16;
  uint32_t mask = args16.mask;
  int8_t is_last = args16.is_last, shift = args16.shift;
  int16_t stride = args16.stride;
  uint64_t seed = args16.seed;
  void *params[] = {&a_ptr, &b_ptr, &n,      &offset, &alpha,      &beta,  &flags,  &scale_fp16,
                    &idx_ptr, &mask, &is_last, &stride, &seed, &scale_bf16, &shift, &acc_ptr};
  return launch_kernel_ex(&config, empty16_function, params, NULL);
}

/* n launches of empty3 (which == 3) or empty16 (which == 16), then a stream
   synchronise; returns the seconds that took (CLOCK_MONOTONIC), or minus the
   CUresult of the first failing call (an unknown `which` is -1, that is
   CUDA_ERROR_INVALID_VALUE). */
double launch_loop(int which, int n) {
  CUresult (*launch_one)(void) = which == 3 ? launch_empty3 : which == 16 ? launch_empty16 : NULL;
  if (!launch_one)
    return -1.0;
  struct timespec start, end;
  clock_gettime(CLOCK_MONOTONIC, &start);
  CUresult r = CUDA_SUCCESS;
  for (int i = 0; i < n && r == CUDA_SUCCESS; i++)
    r = launch_one();
  if (r == CUDA_SUCCESS)
    r = stream_synchronize(stream);
  clock_gettime(CLOCK_MONOTONIC, &end);
  if (r != CUDA_SUCCESS)
    return -(double)r;
  return (double)(end.tv_sec - start.tv_sec) + 1e-9 * (double)(end.tv_nsec - start.tv_nsec);
}

/* A standalone reproducer of one kernel launch, written by `cubinrun repro`.

   {{TITLE}}

   It needs a C compiler and the NVIDIA driver (libcuda.so.1), nothing else:
   no CUDA toolkit, no Python. The few driver types and functions it uses are
   declared below (cuda.h is not redistributable) and resolved with dlopen;
   $CUBINRUN_LIBCUDA names another library to use instead.

   What it does: load kernel.cubin, allocate and fill every buffer from
   inputs/, set the function and launch attributes cubinrun sets, launch once
   with the parameter bytes cubinrun passes (device addresses are this
   program's own), copy the checked outputs back (also to outputs/), compare
   them with expected/ as cubinrun's check does, print PASS or FAIL, then time
   REPRO_REPEATS (default 20) more launches with event pairs.
   Exit codes: 0 PASS, 1 FAIL, 2 a missing or damaged file, 4 a CUDA error. */
#define _POSIX_C_SOURCE 200809L
#include <dlfcn.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the driver API, as much as this program needs (ABI of cuda.h 12/13) -- */

typedef int CUresult;
typedef int CUdevice;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;
typedef unsigned long long CUdeviceptr;

typedef union {
  char pad[64];
  struct { unsigned int x, y, z; } clusterDim;
  int cooperative;
  int clusterSchedulingPolicyPreference;
  int programmaticStreamSerializationAllowed;
} CUlaunchAttributeValue;

typedef struct {
  int id;
  char pad[4];
  CUlaunchAttributeValue value;
} CUlaunchAttribute;

typedef struct {
  unsigned int gridDimX, gridDimY, gridDimZ;
  unsigned int blockDimX, blockDimY, blockDimZ;
  unsigned int sharedMemBytes;
  CUstream hStream;
  CUlaunchAttribute *attrs;
  unsigned int numAttrs;
} CUlaunchConfig;

typedef struct {
  _Alignas(128) unsigned long long opaque[16];
} CUtensorMap;

enum {
  CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES = 1,
  CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8,
  CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED = 14,
  CU_LAUNCH_ATTRIBUTE_COOPERATIVE = 2,
  CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION = 4,
  CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE = 5,
  CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION = 6,
  CU_CLUSTER_SCHEDULING_POLICY_SPREAD = 1,
  CU_STREAM_NON_BLOCKING = 1,
  CU_TENSOR_MAP_L2_PROMOTION_L2_128B = 2,
};

static CUresult (*cuInit)(unsigned int);
static CUresult (*cuDeviceGet)(CUdevice *, int);
static CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice);
static CUresult (*cuCtxSetCurrent)(CUcontext);
static CUresult (*cuModuleLoadData)(CUmodule *, const void *);
static CUresult (*cuModuleGetFunction)(CUfunction *, CUmodule, const char *);
static CUresult (*cuModuleGetGlobal)(CUdeviceptr *, size_t *, CUmodule, const char *);
static CUresult (*cuFuncGetAttribute)(int *, int, CUfunction);
static CUresult (*cuFuncSetAttribute)(CUfunction, int, int);
static CUresult (*cuMemAlloc)(CUdeviceptr *, size_t);
static CUresult (*cuMemFree)(CUdeviceptr);
static CUresult (*cuMemcpyHtoD)(CUdeviceptr, const void *, size_t);
static CUresult (*cuMemcpyDtoH)(void *, CUdeviceptr, size_t);
static CUresult (*cuMemsetD8)(CUdeviceptr, unsigned char, size_t);
static CUresult (*cuStreamCreate)(CUstream *, unsigned int);
static CUresult (*cuStreamSynchronize)(CUstream);
static CUresult (*cuEventCreate)(CUevent *, unsigned int);
static CUresult (*cuEventRecord)(CUevent, CUstream);
static CUresult (*cuEventSynchronize)(CUevent);
static CUresult (*cuEventElapsedTime)(float *, CUevent, CUevent);
static CUresult (*cuLaunchKernelEx)(const CUlaunchConfig *, CUfunction, void **, void **);
static CUresult (*cuTensorMapEncodeTiled)(CUtensorMap *, int, unsigned int, void *,
                                          const unsigned long long *, const unsigned long long *,
                                          const unsigned int *, const unsigned int *, int, int,
                                          int, int);
static CUresult (*cuGetErrorName)(CUresult, const char **);

/* Versioned names first: libcuda keeps the old ABI under the plain name. */
static const struct {
  const char *names[2];
  void **function;
  int optional;
} SYMBOLS[] = {
    {{"cuInit"}, (void **)&cuInit, 0},
    {{"cuDeviceGet"}, (void **)&cuDeviceGet, 0},
    {{"cuDevicePrimaryCtxRetain"}, (void **)&cuDevicePrimaryCtxRetain, 0},
    {{"cuCtxSetCurrent"}, (void **)&cuCtxSetCurrent, 0},
    {{"cuModuleLoadData"}, (void **)&cuModuleLoadData, 0},
    {{"cuModuleGetFunction"}, (void **)&cuModuleGetFunction, 0},
    {{"cuModuleGetGlobal_v2"}, (void **)&cuModuleGetGlobal, 0},
    {{"cuFuncGetAttribute"}, (void **)&cuFuncGetAttribute, 0},
    {{"cuFuncSetAttribute"}, (void **)&cuFuncSetAttribute, 0},
    {{"cuMemAlloc_v2"}, (void **)&cuMemAlloc, 0},
    {{"cuMemFree_v2"}, (void **)&cuMemFree, 0},
    {{"cuMemcpyHtoD_v2"}, (void **)&cuMemcpyHtoD, 0},
    {{"cuMemcpyDtoH_v2"}, (void **)&cuMemcpyDtoH, 0},
    {{"cuMemsetD8_v2"}, (void **)&cuMemsetD8, 0},
    {{"cuStreamCreate"}, (void **)&cuStreamCreate, 0},
    {{"cuStreamSynchronize"}, (void **)&cuStreamSynchronize, 0},
    {{"cuEventCreate"}, (void **)&cuEventCreate, 0},
    {{"cuEventRecord"}, (void **)&cuEventRecord, 0},
    {{"cuEventSynchronize"}, (void **)&cuEventSynchronize, 0},
    {{"cuEventElapsedTime_v2", "cuEventElapsedTime"}, (void **)&cuEventElapsedTime, 0},
    {{"cuLaunchKernelEx"}, (void **)&cuLaunchKernelEx, 0},
    {{"cuTensorMapEncodeTiled"}, (void **)&cuTensorMapEncodeTiled, 1},
    {{"cuGetErrorName"}, (void **)&cuGetErrorName, 1},
};

static void load_driver(void) {
  const char *path = getenv("CUBINRUN_LIBCUDA");
  if (!path || !*path)
    path = "libcuda.so.1";
  void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    fprintf(stderr, "error: cannot open the NVIDIA driver %s: %s\n", path, dlerror());
    exit(4);
  }
  for (size_t i = 0; i < sizeof SYMBOLS / sizeof SYMBOLS[0]; i++) {
    void *found = NULL;
    for (int j = 0; j < 2 && !found && SYMBOLS[i].names[j]; j++)
      found = dlsym(lib, SYMBOLS[i].names[j]);
    if (!found && !SYMBOLS[i].optional) {
      fprintf(stderr, "error: %s has no %s\n", path, SYMBOLS[i].names[0]);
      exit(4);
    }
    *SYMBOLS[i].function = found;
  }
}

static void check(CUresult result, const char *call) {
  if (result == 0)
    return;
  const char *name = NULL;
  if (!cuGetErrorName || cuGetErrorName(result, &name) != 0)
    name = NULL;
  fprintf(stderr, "error: %s failed: %s (%d)\n", call, name ? name : "CUresult", result);
  exit(4);
}
#define CHECK(call) check((call), #call)

/* ---- files ---------------------------------------------------------------- */

static void *read_file(const char *path, size_t nbytes) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "error: cannot open %s\n", path);
    exit(2);
  }
  void *data = malloc(nbytes ? nbytes : 1);
  size_t got = data ? fread(data, 1, nbytes, f) : 0;
  int extra = fgetc(f) != EOF;
  fclose(f);
  if (!data || got != nbytes || extra) {
    fprintf(stderr, "error: %s does not hold %zu bytes\n", path, nbytes);
    exit(2);
  }
  return data;
}

static void write_file(const char *path, const void *data, size_t nbytes) {
  FILE *f = fopen(path, "wb");
  if (!f || fwrite(data, 1, nbytes, f) != nbytes)
    fprintf(stderr, "warning: could not write %s\n", path);
  if (f)
    fclose(f);
}

/* ---- element types, for the comparison ----------------------------------- */

enum { T_I8, T_I16, T_I32, T_I64, T_U8, T_U16, T_U32, T_U64, T_BOOL, T_F16, T_BF16, T_F32,
       T_F64, T_F8 };

static double half_to_double(uint16_t h, int frac_bits, int bias) {
  int exp_bits = 15 - frac_bits;
  int sign = h >> 15, e = (h >> frac_bits) & ((1 << exp_bits) - 1);
  int f = h & ((1 << frac_bits) - 1);
  double v;
  if (e == (1 << exp_bits) - 1)
    v = f ? NAN : INFINITY;
  else if (e == 0)
    v = ldexp((double)f, 1 - bias - frac_bits);
  else
    v = ldexp((double)(f | (1 << frac_bits)), e - bias - frac_bits);
  return sign ? -v : v;
}

/* Element i of `data` as a double; 8-bit floats through their 256-value table. */
static double element(int type, const double *table, const void *data, size_t i) {
  switch (type) {
  case T_I8: return ((const int8_t *)data)[i];
  case T_I16: return ((const int16_t *)data)[i];
  case T_I32: return ((const int32_t *)data)[i];
  case T_I64: return (double)((const int64_t *)data)[i];
  case T_U8: case T_BOOL: return ((const uint8_t *)data)[i];
  case T_U16: return ((const uint16_t *)data)[i];
  case T_U32: return ((const uint32_t *)data)[i];
  case T_U64: return (double)((const uint64_t *)data)[i];
  case T_F16: return half_to_double(((const uint16_t *)data)[i], 10, 15);
  case T_BF16: return half_to_double(((const uint16_t *)data)[i], 7, 127);
  case T_F32: return ((const float *)data)[i];
  case T_F64: return ((const double *)data)[i];
  default: return table[((const uint8_t *)data)[i]];
  }
}

/* ---- what cubinrun launched ------------------------------------------------ */

typedef struct {
  const char *name;
  const char *input;
  size_t nbytes;
  size_t offset;          /* the buffer's start past its allocation's (the spec's offset:) */
  const char *symbol;     /* a module global's symbol (the spec's globals:); NULL: a buffer */
} Buffer;

enum { BITS, CLOSE };     /* bit patterns as the dtype rounds the reference; |out - ref| */

typedef struct {
  const char *name;
  int buffer;
  int mode;
  int type;
  const double *table;    /* 8-bit floats only */
  int is_float;
  size_t count, itemsize;
  double rtol, atol;
  int nan_ok;
  const char *expected;   /* BITS: raw elements; CLOSE: float64 values */
} Check;

{{TABLES}}

static CUdeviceptr aligned(CUdeviceptr p, size_t align) {
  return align > 1 ? (p + align - 1) / align * align : p;
}

static int compare(const Check *c, const void *out) {
  void *expected = read_file(c->expected, c->count * (c->mode == BITS ? c->itemsize : 8));
  size_t bad = 0;
  double max_abs = 0.0;
  for (size_t i = 0; i < c->count; i++) {
    double o = element(c->type, c->table, out, i);
    double r = c->mode == BITS ? element(c->type, c->table, expected, i)
                               : ((const double *)expected)[i];
    int ok;
    if (c->mode == BITS) {
      ok = memcmp((const char *)out + i * c->itemsize, (const char *)expected + i * c->itemsize,
                  c->itemsize) == 0;
      if (c->is_float && isnan(o))
        ok = c->nan_ok && isnan(r);
    } else {
      double err = fabs(o - r);
      if (isfinite(err))
        ok = err <= c->atol + c->rtol * fabs(r);
      else
        ok = o == r || (c->nan_ok && isnan(o) && isnan(r));
    }
    if (isfinite(o) && isfinite(r) && fabs(o - r) > max_abs)
      max_abs = fabs(o - r);
    if (!ok && bad++ < 8)
      printf("  %s[%zu]: got %.9g, expected %.9g\n", c->name, i, o, r);
  }
  printf("%s: %s  %zu / %zu mismatches, max abs err %.3g\n", c->name, bad ? "FAIL" : "pass",
         bad, c->count, max_abs);
  free(expected);
  return bad == 0;
}

static int by_value(const void *a, const void *b) {
  float x = *(const float *)a, y = *(const float *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  (void)argc;
  (void)argv;
  load_driver();
  const char *ordinal = getenv("REPRO_DEVICE");
  CUdevice device;
  CUcontext context;
  CHECK(cuInit(0));
  CHECK(cuDeviceGet(&device, ordinal ? atoi(ordinal) : 0));
  CHECK(cuDevicePrimaryCtxRetain(&context, device));
  CHECK(cuCtxSetCurrent(context));

  void *image = read_file("kernel.cubin", CUBIN_BYTES);
  CUmodule module;
  CUfunction function;
  CHECK(cuModuleLoadData(&module, image));
  CHECK(cuModuleGetFunction(&function, module, KERNEL_NAME));
  /* the attributes cubinrun sets: the opt-in above 48 KiB of shared memory,
     and clusters above the portable size of 8 */
  int static_shared = 0;
  CHECK(cuFuncGetAttribute(&static_shared, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, function));
  if (SHARED_BYTES + static_shared > 48 * 1024)
    CHECK(cuFuncSetAttribute(function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                             SHARED_BYTES));
  if (CLUSTER_SIZE > 8)
    CHECK(cuFuncSetAttribute(function, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1));

  CUdeviceptr dev[NUM_BUFFERS + 1], base[NUM_BUFFERS + 1];
  void *host[NUM_BUFFERS + 1];
  for (int b = 0; b < NUM_BUFFERS; b++) {
    size_t nbytes = BUFFERS[b].offset + BUFFERS[b].nbytes;
    host[b] = read_file(BUFFERS[b].input, BUFFERS[b].nbytes);
    base[b] = 0;
    if (BUFFERS[b].symbol) {        /* a module global: written where the module keeps it */
      size_t size = 0;
      CHECK(cuModuleGetGlobal(&dev[b], &size, module, BUFFERS[b].symbol));
      if (size < BUFFERS[b].nbytes) {
        fprintf(stderr, "global %s holds %zu bytes, not %zu\n", BUFFERS[b].symbol, size,
                BUFFERS[b].nbytes);
        return 4;
      }
    } else {
      CHECK(cuMemAlloc(&base[b], nbytes ? nbytes : 1));
      dev[b] = base[b] + BUFFERS[b].offset;
    }
    if (BUFFERS[b].nbytes)
      CHECK(cuMemcpyHtoD(dev[b], host[b], BUFFERS[b].nbytes));
  }
  CUdeviceptr scratch[2] = {0, 0};
  for (int s = 0; s < 2; s++) {
    if (SCRATCH_BYTES[s] == 0)
      continue;
    CUdeviceptr base;
    size_t extra = SCRATCH_ALIGN[s] > 256 ? SCRATCH_ALIGN[s] : 0;
    CHECK(cuMemAlloc(&base, SCRATCH_BYTES[s] + extra));
    scratch[s] = aligned(base, extra);
    CHECK(cuMemsetD8(scratch[s], 0, SCRATCH_BYTES[s]));
  }

{{PARAMS}}

  CUlaunchAttribute attrs[4];
  memset(attrs, 0, sizeof attrs);
  unsigned int num_attrs = 0;
{{ATTRIBUTES}}
  CUstream stream;
  CHECK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  CUlaunchConfig config = {GRID_X, GRID_Y, GRID_Z, BLOCK_X, BLOCK_Y, BLOCK_Z, SHARED_BYTES,
                           stream, attrs, num_attrs};
  CUevent start, end;
  CHECK(cuEventCreate(&start, 0));
  CHECK(cuEventCreate(&end, 0));
  CHECK(cuEventRecord(start, stream));
  CHECK(cuLaunchKernelEx(&config, function, args, NULL));
  CHECK(cuEventRecord(end, stream));
  CHECK(cuStreamSynchronize(stream));
  float first_ms = 0;
  CHECK(cuEventElapsedTime(&first_ms, start, end));

  int passed = 1;
  for (int k = 0; k < NUM_CHECKS; k++) {
    const Check *c = &CHECKS[k];
    size_t nbytes = BUFFERS[c->buffer].nbytes;
    void *out = malloc(nbytes ? nbytes : 1);
    if (nbytes)
      CHECK(cuMemcpyDtoH(out, dev[c->buffer], nbytes));
    char path[512];
    snprintf(path, sizeof path, "outputs/%s.bin", c->name);
    write_file(path, out, nbytes);
    passed &= compare(c, out);
    free(out);
  }
  if (NUM_CHECKS == 0)
    printf("nothing to check: the spec has no check\n");

  const char *env = getenv("REPRO_REPEATS");
  int repeats = env ? atoi(env) : 20;
  float *times = malloc(sizeof(float) * (repeats > 0 ? repeats : 1));
  for (int r = 0; r < repeats; r++) {
    CHECK(cuEventRecord(start, stream));
    CHECK(cuLaunchKernelEx(&config, function, args, NULL));
    CHECK(cuEventRecord(end, stream));
    CHECK(cuEventSynchronize(end));
    CHECK(cuEventElapsedTime(&times[r], start, end));
  }
  qsort(times, repeats > 0 ? repeats : 0, sizeof(float), by_value);
  printf("%s %s: first launch %.2f us", passed ? "PASS" : "FAIL", KERNEL_NAME, first_ms * 1e3);
  if (repeats > 0)
    printf(", median of %d more %.2f us", repeats, times[repeats / 2] * 1e3);
  printf(" (event pairs, which add ~2 us to short kernels)\n");
  free(times);
  for (int b = 0; b < NUM_BUFFERS; b++) {
    if (base[b])
      cuMemFree(base[b]);
    free(host[b]);
  }
  free(image);
  return passed ? 0 : 1;
}

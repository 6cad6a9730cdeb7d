/* A fake libcuda and libcupti in one library, for CPU tests of cubinrun
   capture's CUPTI injection library (cubinrun/capture/injection.c), which
   reaches both through dlsym. Device memory is host memory handed out by
   fake_alloc; a launch runs the C function fake_kernel() registered for its
   function handle; cuptiSubscribe keeps the callback, which the harness
   (capture_harness.c) calls as CUPTI would around each driver call. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h>
#include <cupti.h>

#define EXPORT __attribute__((visibility("default")))

typedef void (*fake_kernel_fn)(void **params);
static struct { CUfunction f; CUmodule module; size_t count, offset[16], size[16]; fake_kernel_fn run; } functions[8];
static int nfunctions;
static struct { char *base; size_t size; } allocations[64];
static int nallocations;
static CUpti_CallbackFunc subscriber_callback;

EXPORT CUpti_CallbackFunc fake_callback(void) { return subscriber_callback; }

EXPORT void *fake_alloc(size_t size) {
    char *p = calloc(1, size);
    allocations[nallocations].base = p;
    allocations[nallocations++].size = size;
    return p;
}

EXPORT void fake_function(CUfunction f, CUmodule module, size_t count, const size_t *offset,
                          const size_t *size, fake_kernel_fn run) {
    functions[nfunctions].f = f;
    functions[nfunctions].module = module;
    functions[nfunctions].count = count;
    memcpy(functions[nfunctions].offset, offset, count * sizeof *offset);
    memcpy(functions[nfunctions].size, size, count * sizeof *size);
    functions[nfunctions++].run = run;
}

static int find(CUfunction f) {
    for (int i = 0; i < nfunctions; i++)
        if (functions[i].f == f) return i;
    return -1;
}

EXPORT CUresult cuFuncGetParamInfo(CUfunction f, size_t i, size_t *offset, size_t *size) {
    int k = find(f);
    if (k < 0) return CUDA_ERROR_INVALID_HANDLE;
    if (i >= functions[k].count) return CUDA_ERROR_INVALID_VALUE;
    *offset = functions[k].offset[i];
    *size = functions[k].size[i];
    return CUDA_SUCCESS;
}

EXPORT CUresult cuKernelGetParamInfo(CUkernel k, size_t i, size_t *o, size_t *s) {
    (void)k; (void)i; (void)o; (void)s;
    return CUDA_ERROR_INVALID_HANDLE;
}

EXPORT CUresult cuKernelGetFunction(CUfunction *f, CUkernel k) {
    (void)f; (void)k;
    return CUDA_ERROR_INVALID_HANDLE;
}

EXPORT CUresult cuFuncGetModule(CUmodule *module, CUfunction f) {
    int k = find(f);
    if (k < 0) return CUDA_ERROR_INVALID_HANDLE;
    *module = functions[k].module;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuFuncGetName(const char **name, CUfunction f) {
    (void)name; (void)f;
    return CUDA_ERROR_INVALID_HANDLE;       /* the harness's launches are named by CUPTI */
}

EXPORT CUresult cuKernelGetName(const char **name, CUkernel k) {
    (void)name; (void)k;
    return CUDA_ERROR_INVALID_HANDLE;
}

EXPORT CUresult cuPointerGetAttribute(void *data, CUpointer_attribute attribute, CUdeviceptr p) {
    for (int i = 0; i < nallocations; i++) {
        uintptr_t base = (uintptr_t)allocations[i].base;
        if (p >= base && p < base + allocations[i].size) {
            if (attribute == CU_POINTER_ATTRIBUTE_RANGE_START_ADDR) *(CUdeviceptr *)data = base;
            else if (attribute == CU_POINTER_ATTRIBUTE_RANGE_SIZE) *(size_t *)data = allocations[i].size;
            else return CUDA_ERROR_INVALID_VALUE;
            return CUDA_SUCCESS;
        }
    }
    return CUDA_ERROR_INVALID_VALUE;
}

EXPORT CUresult cuMemcpyDtoHAsync_v2(void *host, CUdeviceptr d, size_t n, CUstream s) {
    (void)s;
    memcpy(host, (void *)d, n);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr d, const void *host, size_t n, CUstream s) {
    (void)s;
    memcpy((void *)d, host, n);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuStreamSynchronize(CUstream s) { (void)s; return CUDA_SUCCESS; }

EXPORT CUresult cuStreamIsCapturing(CUstream s, CUstreamCaptureStatus *status) {
    (void)s;
    *status = CU_STREAM_CAPTURE_STATUS_NONE;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                               unsigned by, unsigned bz, unsigned shared, CUstream s,
                               void **params, void **extra) {
    (void)gx; (void)gy; (void)gz; (void)bx; (void)by; (void)bz; (void)shared; (void)s; (void)extra;
    int k = find(f);
    if (k < 0) return CUDA_ERROR_INVALID_HANDLE;
    functions[k].run(params);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuLaunchKernelEx(const CUlaunchConfig *c, CUfunction f, void **params, void **extra) {
    return cuLaunchKernel(f, c->gridDimX, c->gridDimY, c->gridDimZ, c->blockDimX, c->blockDimY,
                          c->blockDimZ, c->sharedMemBytes, c->hStream, params, extra);
}

EXPORT CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                                          unsigned bx, unsigned by, unsigned bz, unsigned shared,
                                          CUstream s, void **params) {
    return cuLaunchKernel(f, gx, gy, gz, bx, by, bz, shared, s, params, NULL);
}

EXPORT CUresult cuGetErrorName(CUresult status, const char **name) {
    (void)status;
    *name = "CUDA_ERROR_FAKE";
    return CUDA_SUCCESS;
}

EXPORT CUptiResult cuptiSubscribe(CUpti_SubscriberHandle *s, CUpti_CallbackFunc callback, void *u) {
    (void)u;
    *s = (CUpti_SubscriberHandle)0x1;
    subscriber_callback = callback;
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiEnableDomain(uint32_t e, CUpti_SubscriberHandle s, CUpti_CallbackDomain d) {
    (void)e; (void)s; (void)d;
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiEnableCallback(uint32_t e, CUpti_SubscriberHandle s, CUpti_CallbackDomain d,
                                       CUpti_CallbackId c) {
    (void)e; (void)s; (void)d; (void)c;
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiGetResultString(CUptiResult r, const char **text) {
    (void)r;
    *text = "fake";
    return CUPTI_SUCCESS;
}

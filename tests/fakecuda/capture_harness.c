/* A program that drives cubinrun capture's CUPTI injection library on the
   CPU, against fake_cupti.c (loaded as libcuda.so.1 and as libcupti): it calls
   InitializeInjection as the driver would, then plays CUPTI's part around
   each driver call: two modules loading (the first through cuModuleLoadData,
   the second lazily, as the runtime's do), the vector add of
   kernels/vector_add.cu launched three times alike, once more on a smaller
   grid and not deterministically, and kernels/structs.cu's struct_saxpy,
   whose struct holds two pointers into one allocation.
   Usage: capture_harness INJECTION.so VECTOR_ADD.cubin STRUCTS.cubin */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h>
#include <cupti.h>

typedef void (*kernel_fn)(void **params);
static void *(*fake_alloc)(size_t);
static void (*fake_function)(CUfunction, CUmodule, size_t, const size_t *, const size_t *, kernel_fn);
static CUpti_CallbackFunc callback;
static int noisy, noise;

static void add_kernel(void **params) {       /* out = x + y (+ a count, when noisy) */
    const float *x = *(float **)params[0], *y = *(float **)params[1];
    float *out = *(float **)params[2];
    int n = *(int *)params[3];
    noise++;
    for (int i = 0; i < n; i++) out[i] = x[i] + y[i] + (noisy ? (float)noise : 0.0f);
}

struct Saxpy { int n; float alpha; const float *x; float *y; };

static void struct_saxpy(void **params) {
    struct Saxpy p = *(struct Saxpy *)params[0];
    const float *scale = params[1];
    double *vec_sum = *(double **)params[3];
    for (int i = 0; i < p.n; i++) p.y[i] = p.alpha * p.x[i] + p.y[i];
    vec_sum[0] = scale[0] + 10 * scale[1] + 100 * scale[2] + 1000 * scale[3];
}

static char *read_file(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    if (!f) { perror(path); exit(2); }
    fseek(f, 0, SEEK_END);
    *size = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    char *data = malloc(*size);
    if (fread(data, 1, *size, f) != *size) exit(2);
    fclose(f);
    return data;
}

static void module_loaded(uint32_t id, const char *path) {
    CUpti_ModuleResourceData module = {0};
    module.moduleId = id;
    module.pCubin = read_file(path, &module.cubinSize);
    CUpti_ResourceData resource = {0};
    resource.resourceDescriptor = &module;
    callback(NULL, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_MODULE_LOADED, &resource);
}

static void driver_call(CUpti_CallbackId cbid, const char *symbol, void *params, CUresult (*call)(void *)) {
    CUresult status = CUDA_SUCCESS;
    CUpti_CallbackData data = {0};
    data.callbackSite = CUPTI_API_ENTER;
    data.symbolName = symbol;
    data.functionParams = params;
    data.functionReturnValue = &status;
    callback(NULL, CUPTI_CB_DOMAIN_DRIVER_API, cbid, &data);
    if (call) status = call(params);
    data.callbackSite = CUPTI_API_EXIT;
    callback(NULL, CUPTI_CB_DOMAIN_DRIVER_API, cbid, &data);
}

static CUresult (*launch_kernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                                 unsigned, unsigned, CUstream, void **, void **);

static CUresult do_launch(void *p) {
    cuLaunchKernel_params *a = p;
    return launch_kernel(a->f, a->gridDimX, a->gridDimY, a->gridDimZ, a->blockDimX, a->blockDimY,
                         a->blockDimZ, a->sharedMemBytes, a->hStream, a->kernelParams, a->extra);
}

static void launch(CUfunction f, const char *name, unsigned grid, unsigned block, void **params) {
    cuLaunchKernel_params p = {f, grid, 1, 1, block, 1, 1, 0, NULL, params, NULL};
    driver_call(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, name, &p, do_launch);
}

int main(int argc, char **argv) {
    if (argc != 4) return 2;
    void *fake = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (!fake) { fprintf(stderr, "%s\n", dlerror()); return 2; }
    fake_alloc = (void *(*)(size_t))dlsym(fake, "fake_alloc");
    *(void **)&fake_function = dlsym(fake, "fake_function");
    *(void **)&launch_kernel = dlsym(fake, "cuLaunchKernel");
    CUpti_CallbackFunc (*fake_callback)(void) = (CUpti_CallbackFunc (*)(void))dlsym(fake, "fake_callback");
    void *injection = dlopen(argv[1], RTLD_NOW);
    if (!injection) { fprintf(stderr, "%s\n", dlerror()); return 2; }
    int (*initialize)(void) = (int (*)(void))dlsym(injection, "InitializeInjection");
    initialize();
    callback = fake_callback();
    if (!callback) { fprintf(stderr, "the injection library did not subscribe\n"); return 3; }

    CUmodule first = (CUmodule)0x1111, second = (CUmodule)0x2222, *out_module = &first;
    cuModuleLoadData_params load = {out_module, NULL};
    {   /* cuModuleLoadData: the module-loaded callback comes between its enter and exit */
        CUresult status = CUDA_SUCCESS;
        CUpti_CallbackData data = {0};
        data.callbackSite = CUPTI_API_ENTER;
        data.functionParams = &load;
        data.functionReturnValue = &status;
        callback(NULL, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuModuleLoadData, &data);
        module_loaded(1, argv[2]);
        data.callbackSite = CUPTI_API_EXIT;
        callback(NULL, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuModuleLoadData, &data);
    }
    module_loaded(2, argv[3]);                 /* lazily: no load call to pair it with */

    CUfunction add = (CUfunction)0xf1, saxpy = (CUfunction)0xf2;
    size_t add_offsets[] = {0, 8, 16, 24}, add_sizes[] = {8, 8, 8, 4};
    fake_function(add, first, 4, add_offsets, add_sizes, add_kernel);
    size_t saxpy_offsets[] = {0, 32, 48, 64, 72}, saxpy_sizes[] = {24, 16, 16, 8, 8};
    fake_function(saxpy, second, 5, saxpy_offsets, saxpy_sizes, struct_saxpy);

    int n = 4096;
    float *x = fake_alloc(n * sizeof(float)), *y = fake_alloc(n * sizeof(float)),
          *out = fake_alloc(n * sizeof(float));
    for (int i = 0; i < n; i++) { x[i] = (float)i; y[i] = 0.5f; }
    void *add_params[] = {&x, &y, &out, &n};
    for (int step = 0; step < 3; step++) launch(add, "add_kernel", 4, 1024, add_params);
    noisy = 1;
    int half = n / 2;
    void *noisy_params[] = {&x, &y, &out, &half};
    launch(add, "add_kernel", 2, 1024, noisy_params);

    float *both = fake_alloc(2 * 1024 * sizeof(float));
    for (int i = 0; i < 2048; i++) both[i] = (float)(i % 10);
    struct Saxpy p = {1024, 2.0f, both, both + 1024};
    float scale[4] = {1, 2, 3, 4};
    unsigned char taps[16] = {0};
    double *sums = fake_alloc(2 * sizeof(double)), *taps_sum = sums + 1;
    void *saxpy_params[] = {&p, scale, taps, &sums, &taps_sum};
    launch(saxpy, "struct_saxpy", 4, 256, saxpy_params);
    printf("out[5] %.1f both[1029] %.1f sums[0] %.1f\n", out[5], both[1029], sums[0]);
    return 0;
}

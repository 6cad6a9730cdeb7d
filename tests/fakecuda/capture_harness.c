/* A program that drives cubinrun capture's CUPTI injection library on the
   CPU, against fake_cupti.c (loaded as libcuda.so.1 and as libcupti): it calls
   InitializeInjection as the driver would, then plays CUPTI's part around
   each driver call: two modules loading (the first through cuModuleLoadData,
   the second lazily, as the runtime's do), the vector add of
   kernels/vector_add.cu launched three times alike, once more on a smaller
   grid and not deterministically, and kernels/structs.cu's struct_saxpy,
   whose struct holds two pointers into one allocation.
   With a fourth cubin and a fatbin it plays another program instead
   (more_program): a launch whose parameters come through `extra`; conv1d
   reading its __constant__ filter and counting its calls in a __device__
   variable; CUDA graphs: one by stream capture, one of two dependent nodes
   by cuGraphAddKernelNode (each launched twice after its inputs were
   written), the same again with a node's parameters set in the executable
   graph, another of the first with nothing new in it, and one of a memset
   node, a child graph and a kernel whose source graph is destroyed once
   instantiated; a kernel that reads a pointer array; a kernel of a library
   (cuLibraryLoadData of a compressed fatbin, through the runtime's fatbin
   wrapper) that no module callback ties to it; and an output holding a stale
   address that the kernel overwrites.
   Usage: capture_harness INJECTION.so VECTOR_ADD.cubin STRUCTS.cubin
                          [CONV1D.cubin CLUSTER.compressed.fatbin] */
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

static void launch_on(CUfunction f, const char *name, unsigned grid, unsigned block, void **params,
                      void **extra, CUstream stream) {
    cuLaunchKernel_params p = {f, grid, 1, 1, block, 1, 1, 0, stream, params, extra};
    driver_call(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, name, &p, do_launch);
}

static void launch(CUfunction f, const char *name, unsigned grid, unsigned block, void **params) {
    launch_on(f, name, grid, block, params, NULL, NULL);
}

static void load_module(uint32_t id, const char *path, CUmodule *module) {
    /* cuModuleLoadData: the module-loaded callback comes between its enter and exit */
    cuModuleLoadData_params load = {module, NULL};
    CUresult status = CUDA_SUCCESS;
    CUpti_CallbackData data = {0};
    data.callbackSite = CUPTI_API_ENTER;
    data.functionParams = &load;
    data.functionReturnValue = &status;
    callback(NULL, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuModuleLoadData, &data);
    module_loaded(id, path);
    data.callbackSite = CUPTI_API_EXIT;
    callback(NULL, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuModuleLoadData, &data);
}

/* ---- the second program: `extra`, module globals, graphs ---------------------------- */
static float filter[64];
static unsigned calls;

static void conv1d(void **params) {            /* y[i] = sum filter[t] x[i + t]; calls++ */
    const float *x = *(float **)params[0];
    float *y = *(float **)params[1];
    int n = *(int *)params[2], taps = *(int *)params[3];
    for (int i = 0; i < n; i++) {
        y[i] = 0;
        for (int t = 0; t < taps; t++) y[i] += filter[t] * x[i + t];
    }
    calls++;
}

static void gather(void **params) {            /* out[i] = table[0][i] + table[1][i] */
    float **table = *(float ***)params[0];
    float *out = *(float **)params[1];
    int n = *(int *)params[2];
    for (int i = 0; i < n; i++) out[i] = table[0][i] + table[1][i];
}

static void *symbol_of(const char *name) {
    void *fake = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    return dlsym(fake, name);
}

static CUgraphExec instantiate(CUgraph graph) {
    CUgraphExec exec = NULL;
    cuGraphInstantiateWithFlags_params p = {&exec, graph, 0};
    CUresult (*call)(CUgraphExec *, CUgraph, unsigned long long) = symbol_of("cuGraphInstantiateWithFlags");
    CUresult status = CUDA_SUCCESS;
    CUpti_CallbackData data = {0};
    data.functionParams = &p;
    data.functionReturnValue = &status;
    data.callbackSite = CUPTI_API_ENTER;
    callback(NULL, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithFlags, &data);
    status = call(&exec, graph, 0);
    data.callbackSite = CUPTI_API_EXIT;
    callback(NULL, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithFlags, &data);
    return exec;
}

static CUresult do_graph_launch(void *p) {
    CUresult (*call)(CUgraphExec, CUstream) = symbol_of("cuGraphLaunch");
    return call(((cuGraphLaunch_params *)p)->hGraph, ((cuGraphLaunch_params *)p)->hStream);
}

static void graph_launch(CUgraphExec exec, CUstream stream) {
    cuGraphLaunch_params p = {exec, stream};
    driver_call(CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch, NULL, &p, do_graph_launch);
}

static void fixed_block(void **params) {
    float *out = *(float **)params[0];
    for (int i = 0; i < 256; i++) out[i] = 3.0f;
}

/* the runtime's way: cuLibraryLoadData of its fatbin wrapper {magic, version, data, 0} */
static void library_program(const char *fatbin_path) {
    size_t size;
    struct { unsigned magic, version; const void *data, *unused; } wrapper = {0x466243b1u, 1, NULL, NULL};
    wrapper.data = read_file(fatbin_path, &size);
    CUlibrary library = (CUlibrary)0x4444;
    cuLibraryLoadData_params load = {&library, &wrapper, NULL, NULL, 0, NULL, NULL, 0};
    driver_call(CUPTI_DRIVER_TRACE_CBID_cuLibraryLoadData, NULL, &load, NULL);
    CUfunction kernel = (CUfunction)0xf5;          /* a CUkernel: no module to tell */
    size_t offsets[] = {0}, sizes[] = {8};
    fake_function(kernel, NULL, 1, offsets, sizes, fixed_block);
    void (*kernel_library)(CUkernel, CUlibrary) = symbol_of("fake_kernel_library");
    kernel_library((CUkernel)kernel, library);
    float *out = fake_alloc(256 * sizeof(float));
    void *params[] = {&out};
    cuLaunchKernel_params p = {kernel, 1, 1, 1, 128, 2, 1, 0, NULL, params, NULL};
    driver_call(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, "fixed_block", &p, do_launch);
}

static int more_program(CUfunction add, CUfunction saxpy, const char *conv_cubin,
                        const char *fatbin) {
    CUmodule third = (CUmodule)0x3333;
    module_loaded(3, conv_cubin);      /* lazily, unpaired: its globals found by the kernel's name */
    CUfunction conv = (CUfunction)0xf3;
    size_t conv_offsets[] = {0, 8, 16, 20}, conv_sizes[] = {8, 8, 4, 4};
    fake_function(conv, third, 4, conv_offsets, conv_sizes, conv1d);
    void (*fake_global)(CUmodule, const char *, void *, size_t) = symbol_of("fake_global");
    fake_global(third, "d_filter", filter, sizeof filter);
    fake_global(third, "d_calls", &calls, sizeof calls);
    void (*name_function)(CUfunction, const char *) = symbol_of("fake_function_name");
    name_function(add, "add_kernel");
    name_function(saxpy, "struct_saxpy");

    /* parameters through `extra`: one buffer, laid out as the kernel's parameters */
    int n = 1024;
    float *x = fake_alloc(n * sizeof(float)), *y = fake_alloc(n * sizeof(float)),
          *out = fake_alloc(n * sizeof(float));
    for (int i = 0; i < n; i++) { x[i] = (float)i; y[i] = 2.0f; }
    unsigned char buffer[32] = {0};
    memcpy(buffer, &x, 8); memcpy(buffer + 8, &y, 8); memcpy(buffer + 16, &out, 8);
    memcpy(buffer + 24, &n, 4);
    size_t buffer_size = 28;
    void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, buffer, CU_LAUNCH_PARAM_BUFFER_SIZE, &buffer_size,
                     CU_LAUNCH_PARAM_END};
    launch_on(add, "add_kernel", 1, 1024, NULL, extra, NULL);

    /* module globals: a __constant__ filter the program set, a __device__ counter */
    filter[0] = 1; filter[1] = 10; filter[2] = 100;
    calls = 41;
    int taps = 3, m = 256;
    float *signal = fake_alloc((m + taps - 1) * sizeof(float)), *smooth = fake_alloc(m * sizeof(float));
    for (int i = 0; i < m + taps - 1; i++) signal[i] = (float)(i % 7);
    void *conv_params[] = {&signal, &smooth, &m, &taps};
    launch(conv, "conv1d", 1, 256, conv_params);

    /* a graph by stream capture: its node's inputs are written after capture */
    CUstream stream = (CUstream)0x5;
    CUgraph captured_graph;
    CUresult (*begin)(CUstream, CUstreamCaptureMode) = symbol_of("cuStreamBeginCapture_v2");
    CUresult (*end)(CUstream, CUgraph *) = symbol_of("cuStreamEndCapture");
    int k = 256;
    float *gx = fake_alloc(k * sizeof(float)), *gy = fake_alloc(k * sizeof(float)),
          *gout = fake_alloc(k * sizeof(float));
    void *graph_params[] = {&gx, &gy, &gout, &k};
    begin(stream, CU_STREAM_CAPTURE_MODE_GLOBAL);
    launch_on(add, "add_kernel", 8, 32, graph_params, NULL, stream);
    end(stream, &captured_graph);
    CUgraphExec first = instantiate(captured_graph);
    for (int i = 0; i < k; i++) { gx[i] = 100.0f + i; gy[i] = 1.0f; }
    graph_launch(first, stream);
    graph_launch(first, stream);
    /* another executable graph of it: nothing new in it, so it is not walked (its
       node runs once, in the graph's own launch) */
    int (*kernel_runs)(void) = symbol_of("fake_kernel_runs");
    int runs_before = kernel_runs();
    graph_launch(instantiate(captured_graph), stream);
    int runs_of_known_graph = kernel_runs() - runs_before;

    /* a graph of two nodes added by hand: the second reads what the first wrote,
       and accumulates in place (so a graph run twice over would show) */
    CUgraph built;
    CUresult (*create)(CUgraph *, unsigned) = symbol_of("cuGraphCreate");
    CUresult (*add_node)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t,
                         const CUDA_KERNEL_NODE_PARAMS *) = symbol_of("cuGraphAddKernelNode_v2");
    create(&built, 0);
    int h = 512;
    float *hx = fake_alloc(h * sizeof(float)), *hy = fake_alloc(h * sizeof(float)),
          *mid = fake_alloc(h * sizeof(float)), *acc = fake_alloc(h * sizeof(float));
    void *first_params[] = {&hx, &hy, &mid, &h};
    CUDA_KERNEL_NODE_PARAMS node = {0};
    node.func = add; node.gridDimX = 16; node.gridDimY = node.gridDimZ = 1;
    node.blockDimX = 32; node.blockDimY = node.blockDimZ = 1; node.kernelParams = first_params;
    CUgraphNode a, b;
    add_node(&a, built, NULL, 0, &node);
    struct Saxpy p = {h, 3.0f, mid, acc};
    float scale[4] = {1, 1, 1, 1};
    unsigned char taps16[16] = {0};
    double *sums = fake_alloc(2 * sizeof(double)), *taps_sum = sums + 1;
    void *second_params[] = {&p, scale, taps16, &sums, &taps_sum};
    node.func = saxpy; node.gridDimX = 2; node.blockDimX = 256; node.kernelParams = second_params;
    add_node(&b, built, &a, 1, &node);
    void (*make_cooperative)(CUgraphNode) = symbol_of("fake_node_cooperative");
    make_cooperative(b);                /* it launches as a cooperative node, walked alike */
    CUgraphExec second = instantiate(built);
    for (int i = 0; i < h; i++) { hx[i] = (float)i; hy[i] = 0.5f; acc[i] = 1.0f; }
    graph_launch(second, stream);
    graph_launch(second, stream);
    /* the same graph again, its node's parameters set in the executable graph: the
       source graph no longer says what runs, so its nodes are left out */
    CUgraphExec changed = instantiate(built);
    cuGraphExecKernelNodeSetParams_v2_params set = {changed, b, &node};
    driver_call(CUPTI_DRIVER_TRACE_CBID_cuGraphExecKernelNodeSetParams_v2, NULL, &set, NULL);
    graph_launch(changed, stream);

    /* a graph whose first node is a child graph: its node runs, and is captured, in place */
    CUgraph inner, outer;
    CUresult (*add_child)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t, CUgraph) =
        symbol_of("cuGraphAddChildGraphNode");
    create(&inner, 0);
    create(&outer, 0);
    int c = 128;
    float *cx = fake_alloc(c * sizeof(float)), *cy = fake_alloc(c * sizeof(float)),
          *cmid = fake_alloc(c * sizeof(float)), *cacc = fake_alloc(c * sizeof(float));
    void *inner_params[] = {&cx, &cy, &cmid, &c};
    node.func = add; node.gridDimX = 32; node.blockDimX = 4; node.kernelParams = inner_params;
    CUgraphNode child_node, last, fill;
    add_node(&a, inner, NULL, 0, &node);
    /* a memset node first: the walk does it, so the node after reads 1.0 there */
    CUresult (*add_memset)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t,
                           const CUDA_MEMSET_NODE_PARAMS *, CUcontext) = symbol_of("cuGraphAddMemsetNode");
    CUDA_MEMSET_NODE_PARAMS ones = {0};
    ones.dst = (CUdeviceptr)cacc;
    ones.pitch = c * sizeof(float);
    ones.elementSize = 4;
    ones.value = 0x3f800000u;           /* 1.0f */
    ones.height = 1;
    ones.width = (size_t)c;
    add_memset(&fill, outer, NULL, 0, &ones, NULL);
    add_child(&child_node, outer, &fill, 1, inner);
    struct Saxpy q = {c, 1.0f, cmid, cacc};
    void *outer_params[] = {&q, scale, taps16, &sums, &taps_sum};
    node.func = saxpy; node.gridDimX = 4; node.blockDimX = 32; node.kernelParams = outer_params;
    add_node(&last, outer, &child_node, 1, &node);
    CUgraphExec nested = instantiate(outer);
    CUresult (*destroy)(CUgraph) = symbol_of("cuGraphDestroy");
    destroy(outer);                     /* as PyTorch's CUDAGraph does once instantiated */
    for (int i = 0; i < c; i++) { cx[i] = 2.0f * i; cy[i] = 1.0f; cacc[i] = 0.0f; }
    graph_launch(nested, stream);
    /* a pointer array: the kernel loads its inputs' addresses from device memory */
    CUfunction gather_rows = (CUfunction)0xf4;
    size_t gather_offsets[] = {0, 8, 16}, gather_sizes[] = {8, 8, 4};
    fake_function(gather_rows, (CUmodule)0x1111, 3, gather_offsets, gather_sizes, gather);
    int rows = 64;
    float *row0 = fake_alloc(rows * sizeof(float)), *row1 = fake_alloc(rows * sizeof(float)),
          *gathered = fake_alloc(rows * sizeof(float));
    for (int i = 0; i < rows; i++) { row0[i] = (float)i; row1[i] = 1000.0f; }
    float **table = fake_alloc(2 * sizeof(float *));
    table[0] = row0;
    table[1] = row1;
    void *gather_params[] = {&table, &gathered, &rows};
    launch(gather_rows, "gather_rows", 1, 64, gather_params);
    library_program(fatbin);

    /* an output that held a stale address (memory handed back), which the kernel
       overwrites: no pointer it loads, so the launch is captured as any other */
    float *stale = fake_alloc(n * sizeof(float));
    memcpy(stale, &row0, sizeof row0);
    void *stale_params[] = {&x, &y, &stale, &n};
    launch(add, "add_kernel", 64, 16, stale_params);
    printf("out[5] %.1f smooth[2] %.1f calls %u gout[3] %.1f acc[4] %.1f gathered[7] %.1f "
           "cacc[3] %.1f known graph %d run(s)\n", out[5], smooth[2], calls, gout[3], acc[4],
           gathered[7], cacc[3], runs_of_known_graph);
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 4 && argc != 6) return 2;
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

    CUmodule first = (CUmodule)0x1111, second = (CUmodule)0x2222;
    load_module(1, argv[2], &first);
    module_loaded(2, argv[3]);                 /* lazily: no load call to pair it with */

    CUfunction add = (CUfunction)0xf1, saxpy = (CUfunction)0xf2;
    size_t add_offsets[] = {0, 8, 16, 24}, add_sizes[] = {8, 8, 8, 4};
    fake_function(add, first, 4, add_offsets, add_sizes, add_kernel);
    size_t saxpy_offsets[] = {0, 32, 48, 64, 72}, saxpy_sizes[] = {24, 16, 16, 8, 8};
    fake_function(saxpy, second, 5, saxpy_offsets, saxpy_sizes, struct_saxpy);
    if (argc == 6) return more_program(add, saxpy, argv[4], argv[5]);

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

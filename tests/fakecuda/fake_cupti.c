/* A fake libcuda and libcupti in one library, for CPU tests of cubinrun
   capture's CUPTI injection library (cubinrun/capture/injection.c), which
   reaches both through dlsym. Device memory is host memory handed out by
   fake_alloc; a launch runs the C function fake_kernel() registered for its
   function handle; cuptiSubscribe keeps the callback, which the harness
   (capture_harness.c) calls as CUPTI would around each driver call.
   Module globals are host memory fake_global() names for a module; graphs
   hold kernel nodes (a launch into a stream being captured adds one after the
   last, cuGraphAddKernelNode one after its dependencies, each with a copy of
   its parameters' bytes) and a launch of an executable graph runs its nodes
   in the order they were added. */
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
static struct { CUmodule module; const char *name; void *address; size_t size; } globals[8];
static int nglobals;
static struct { CUfunction f; const char *name; } names[8];
static int nnames;

#define MAX_NODES 8
typedef struct FakeNode {
    CUgraphNodeType type;
    struct FakeGraph *child;    /* a child graph node's graph */
    CUfunction f;
    unsigned grid[3], block[3], shared;
    unsigned char bytes[256];
    void *params[16];
    struct FakeNode *deps[4];
    size_t ndeps;
    int cooperative;
    CUDA_MEMSET_NODE_PARAMS memset;     /* a memset node's */
} FakeNode;
typedef struct FakeGraph { FakeNode nodes[MAX_NODES]; size_t count; int destroyed; } FakeGraph;
typedef struct { FakeGraph *graph; } FakeExec;
static CUstream capturing;
static FakeGraph *capture_graph;
static int graph_launches;

static int kernel_runs;

EXPORT int fake_graph_launches(void) { return graph_launches; }
EXPORT int fake_kernel_runs(void) { return kernel_runs; }

EXPORT void fake_global(CUmodule module, const char *name, void *address, size_t size) {
    globals[nglobals].module = module;
    globals[nglobals].name = name;
    globals[nglobals].address = address;
    globals[nglobals++].size = size;
}

static struct { CUkernel kernel; CUlibrary library; } kernel_libraries[4];
static int nkernel_libraries;

EXPORT void fake_kernel_library(CUkernel kernel, CUlibrary library) {
    kernel_libraries[nkernel_libraries].kernel = kernel;
    kernel_libraries[nkernel_libraries++].library = library;
}

EXPORT CUresult cuKernelGetLibrary(CUlibrary *library, CUkernel kernel) {
    for (int i = 0; i < nkernel_libraries; i++)
        if (kernel_libraries[i].kernel == kernel) { *library = kernel_libraries[i].library; return CUDA_SUCCESS; }
    return CUDA_ERROR_INVALID_HANDLE;
}

EXPORT CUresult cuCtxGetDevice(CUdevice *device) { *device = 0; return CUDA_SUCCESS; }

EXPORT CUresult cuDeviceGetAttribute(int *value, CUdevice_attribute attribute, CUdevice device) {
    (void)device;
    if (attribute == CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR) *value = 9;
    else if (attribute == CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR) *value = 0;
    else return CUDA_ERROR_INVALID_VALUE;
    return CUDA_SUCCESS;
}

EXPORT void fake_function_name(CUfunction f, const char *name) {
    names[nnames].f = f;
    names[nnames++].name = name;
}

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
    for (int i = 0; i < nnames; i++)
        if (names[i].f == f) { *name = names[i].name; return CUDA_SUCCESS; }
    return CUDA_ERROR_INVALID_HANDLE;       /* the harness's launches are named by CUPTI */
}

EXPORT CUresult cuModuleGetGlobal_v2(CUdeviceptr *address, size_t *size, CUmodule module,
                                     const char *name) {
    for (int i = 0; i < nglobals; i++)
        if (globals[i].module == module && strcmp(globals[i].name, name) == 0) {
            *address = (CUdeviceptr)globals[i].address;
            *size = globals[i].size;
            return CUDA_SUCCESS;
        }
    return CUDA_ERROR_NOT_FOUND;
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
    *status = capturing && s == capturing ? CU_STREAM_CAPTURE_STATUS_ACTIVE
                                          : CU_STREAM_CAPTURE_STATUS_NONE;
    return CUDA_SUCCESS;
}

/* kernelParams, or the `extra` buffer split by the function's parameter offsets */
static void **parameters(int k, void **params, void **extra, void **split) {
    if (params || !extra) return params;
    unsigned char *buffer = NULL;
    for (int i = 0; extra[i] != CU_LAUNCH_PARAM_END; i += 2)
        if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER) buffer = extra[i + 1];
    for (size_t i = 0; i < functions[k].count; i++) split[i] = buffer + functions[k].offset[i];
    return split;
}

static FakeNode *add_node(FakeGraph *g, CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                          unsigned bx, unsigned by, unsigned bz, unsigned shared, void **params) {
    int k = find(f);
    if (k < 0 || g->count == MAX_NODES) return NULL;
    FakeNode *node = &g->nodes[g->count++];
    memset(node, 0, sizeof *node);
    node->type = CU_GRAPH_NODE_TYPE_KERNEL;
    node->f = f;
    node->grid[0] = gx; node->grid[1] = gy; node->grid[2] = gz;
    node->block[0] = bx; node->block[1] = by; node->block[2] = bz;
    node->shared = shared;
    for (size_t i = 0; i < functions[k].count; i++) {          /* the values, as the driver keeps them */
        memcpy(node->bytes + functions[k].offset[i], params[i], functions[k].size[i]);
        node->params[i] = node->bytes + functions[k].offset[i];
    }
    return node;
}

EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                               unsigned by, unsigned bz, unsigned shared, CUstream s,
                               void **params, void **extra) {
    int k = find(f);
    if (k < 0) return CUDA_ERROR_INVALID_HANDLE;
    void *split[16];
    params = parameters(k, params, extra, split);
    if (capturing && s == capturing) {
        FakeGraph *g = capture_graph;
        FakeNode *node = add_node(g, f, gx, gy, gz, bx, by, bz, shared, params);
        if (!node) return CUDA_ERROR_INVALID_VALUE;
        if (g->count > 1) node->deps[node->ndeps++] = &g->nodes[g->count - 2];
        return CUDA_SUCCESS;
    }
    functions[k].run(params);
    kernel_runs++;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuStreamBeginCapture_v2(CUstream s, CUstreamCaptureMode mode) {
    (void)mode;
    capturing = s;
    capture_graph = calloc(1, sizeof *capture_graph);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuStreamEndCapture(CUstream s, CUgraph *graph) {
    (void)s;
    *graph = (CUgraph)capture_graph;
    capturing = NULL;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuGraphCreate(CUgraph *graph, unsigned flags) {
    (void)flags;
    *graph = (CUgraph)calloc(1, sizeof(FakeGraph));
    return CUDA_SUCCESS;
}

EXPORT CUresult cuGraphAddKernelNode_v2(CUgraphNode *node, CUgraph graph, const CUgraphNode *deps,
                                        size_t ndeps, const CUDA_KERNEL_NODE_PARAMS *p) {
    FakeNode *added = add_node((FakeGraph *)graph, p->func, p->gridDimX, p->gridDimY, p->gridDimZ,
                               p->blockDimX, p->blockDimY, p->blockDimZ, p->sharedMemBytes,
                               p->kernelParams);
    if (!added || ndeps > 4) return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < ndeps; i++) added->deps[i] = (FakeNode *)deps[i];
    added->ndeps = ndeps;
    *node = (CUgraphNode)added;
    return CUDA_SUCCESS;
}

/* A copy whose nodes point at their own parameter bytes and dependencies. */
EXPORT CUresult cuGraphClone(CUgraph *clone, CUgraph graph) {
    const FakeGraph *g = (const FakeGraph *)graph;
    if (g->destroyed) return CUDA_ERROR_INVALID_VALUE;
    FakeGraph *copy = malloc(sizeof *copy);
    *copy = *g;
    for (size_t k = 0; k < copy->count; k++) {
        for (size_t i = 0; i < 16 && g->nodes[k].params[i]; i++)
            copy->nodes[k].params[i] = copy->nodes[k].bytes +
                                       ((unsigned char *)g->nodes[k].params[i] - g->nodes[k].bytes);
        for (size_t d = 0; d < g->nodes[k].ndeps; d++)
            copy->nodes[k].deps[d] = &copy->nodes[g->nodes[k].deps[d] - g->nodes];
    }
    *clone = (CUgraph)copy;
    return CUDA_SUCCESS;
}

/* Kept, but unusable: a walk of a graph the program destroyed must fail, not read
   freed memory that may still look right. */
EXPORT CUresult cuGraphDestroy(CUgraph graph) {
    ((FakeGraph *)graph)->destroyed = 1;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuGraphGetNodes(CUgraph graph, CUgraphNode *nodes, size_t *count) {
    FakeGraph *g = (FakeGraph *)graph;
    if (g->destroyed) return CUDA_ERROR_INVALID_VALUE;
    if (nodes)       /* the last added first: the walk must order them itself */
        for (size_t i = 0; i < g->count && i < *count; i++) nodes[i] = (CUgraphNode)&g->nodes[g->count - 1 - i];
    *count = g->count;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuGraphNodeGetType(CUgraphNode node, CUgraphNodeType *type) {
    *type = ((FakeNode *)node)->type;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuGraphAddChildGraphNode(CUgraphNode *node, CUgraph graph, const CUgraphNode *deps,
                                         size_t ndeps, CUgraph child) {
    FakeGraph *g = (FakeGraph *)graph;
    if (g->count == MAX_NODES || ndeps > 4) return CUDA_ERROR_INVALID_VALUE;
    FakeNode *added = &g->nodes[g->count++];
    memset(added, 0, sizeof *added);
    added->type = CU_GRAPH_NODE_TYPE_GRAPH;
    added->child = (FakeGraph *)child;
    for (size_t i = 0; i < ndeps; i++) added->deps[i] = (FakeNode *)deps[i];
    added->ndeps = ndeps;
    *node = (CUgraphNode)added;
    return CUDA_SUCCESS;
}

EXPORT void fake_node_cooperative(CUgraphNode node) { ((FakeNode *)node)->cooperative = 1; }

EXPORT CUresult cuGraphKernelNodeGetAttribute(CUgraphNode node, CUkernelNodeAttrID id,
                                              CUkernelNodeAttrValue *value) {
    memset(value, 0, sizeof *value);
    if (id == CU_LAUNCH_ATTRIBUTE_COOPERATIVE) value->cooperative = ((FakeNode *)node)->cooperative;
    else if (id == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION)
        value->clusterDim.x = value->clusterDim.y = value->clusterDim.z = 1;
    else return CUDA_ERROR_INVALID_VALUE;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuGraphChildGraphNodeGetGraph(CUgraphNode node, CUgraph *graph) {
    *graph = (CUgraph)((FakeNode *)node)->child;
    return CUDA_SUCCESS;
}

#undef cuGraphNodeGetDependencies      /* the first version, which takes no edge data */
EXPORT CUresult cuGraphNodeGetDependencies(CUgraphNode node, CUgraphNode *deps, size_t *count) {
    FakeNode *n = (FakeNode *)node;
    if (deps)
        for (size_t i = 0; i < n->ndeps && i < *count; i++) deps[i] = (CUgraphNode)n->deps[i];
    *count = n->ndeps;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuGraphKernelNodeGetParams_v2(CUgraphNode node, CUDA_KERNEL_NODE_PARAMS *p) {
    FakeNode *n = (FakeNode *)node;
    memset(p, 0, sizeof *p);
    p->func = n->f;
    p->gridDimX = n->grid[0]; p->gridDimY = n->grid[1]; p->gridDimZ = n->grid[2];
    p->blockDimX = n->block[0]; p->blockDimY = n->block[1]; p->blockDimZ = n->block[2];
    p->sharedMemBytes = n->shared;
    p->kernelParams = n->params;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuGraphInstantiateWithFlags(CUgraphExec *exec, CUgraph graph, unsigned long long flags) {
    (void)flags;
    FakeExec *e = calloc(1, sizeof *e);
    e->graph = (FakeGraph *)graph;
    *exec = (CUgraphExec)e;
    return CUDA_SUCCESS;
}

static void fill32(CUdeviceptr dst, unsigned value, size_t count) {
    for (size_t i = 0; i < count; i++) ((unsigned *)dst)[i] = value;
}

EXPORT CUresult cuMemsetD2D32Async(CUdeviceptr dst, size_t pitch, unsigned value, size_t width,
                                   size_t height, CUstream s) {
    (void)pitch; (void)s;
    fill32(dst, value, width * height);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuGraphAddMemsetNode(CUgraphNode *node, CUgraph graph, const CUgraphNode *deps,
                                     size_t ndeps, const CUDA_MEMSET_NODE_PARAMS *p, CUcontext c) {
    (void)c;
    FakeGraph *g = (FakeGraph *)graph;
    if (g->count == MAX_NODES || ndeps > 4 || p->elementSize != 4) return CUDA_ERROR_INVALID_VALUE;
    FakeNode *added = &g->nodes[g->count++];
    memset(added, 0, sizeof *added);
    added->type = CU_GRAPH_NODE_TYPE_MEMSET;
    added->memset = *p;
    for (size_t i = 0; i < ndeps; i++) added->deps[i] = (FakeNode *)deps[i];
    added->ndeps = ndeps;
    *node = (CUgraphNode)added;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuGraphMemsetNodeGetParams(CUgraphNode node, CUDA_MEMSET_NODE_PARAMS *p) {
    *p = ((FakeNode *)node)->memset;
    return CUDA_SUCCESS;
}

static void run_graph(FakeGraph *g) {
    for (size_t i = 0; i < g->count; i++) {
        if (g->nodes[i].type == CU_GRAPH_NODE_TYPE_MEMSET)
            fill32(g->nodes[i].memset.dst, g->nodes[i].memset.value,
                   g->nodes[i].memset.width * g->nodes[i].memset.height);
        else if (g->nodes[i].type == CU_GRAPH_NODE_TYPE_GRAPH) run_graph(g->nodes[i].child);
        else functions[find(g->nodes[i].f)].run(g->nodes[i].params), kernel_runs++;
    }
}

EXPORT CUresult cuGraphLaunch(CUgraphExec exec, CUstream s) {
    (void)s;
    graph_launches++;
    run_graph(((FakeExec *)exec)->graph);
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

/* cubinrun capture's CUPTI injection library: loaded into the unchanged
 * program by the CUDA driver ($CUDA_INJECTION64_PATH), which calls
 * InitializeInjection at cuInit.
 *
 * It saves every module's cubin as it loads (resource domain), and for the
 * launches it selects (driver domain: cuLaunchKernel, cuLaunchKernelEx,
 * cuLaunchCooperativeKernel and their per-thread-stream variants) the
 * parameters' bytes (cuFuncGetParamInfo, or cuKernelGetParamInfo when the
 * runtime passes a CUkernel), which 8-byte words of them are device pointers
 * (cuPointerGetAttribute: the allocation's start and size), and the memory
 * those pointers reach, before the launch and after it, on the launch's
 * stream. A launch that changed memory runs once more from the saved inputs
 * (deterministic or not), then the first launch's results are put back.
 *
 * What it writes (the raw records cubinrun turns into specs, see
 * cubinrun/capture/records.py) goes under $CUBINRUN_CAPTURE_DIR/raw/cupti-PID/.
 * Every CUPTI and driver call is checked; a failure is one line on stderr and
 * in the debug log, and that launch (or, for set-up, capture) is given up:
 * the program itself always runs on.
 *
 * The driver and CUPTI are reached through dlsym: the library links neither,
 * so it builds with only the headers.
 *
 * This file is the library's first part (the driver and CUPTI's entry points,
 * its state, its files and the modules it saw); injection.c (one launch),
 * injection_globals.c (module globals), injection_graphs.c (launches inside
 * CUDA graphs) and injection_start.c (the callback and start-up) follow it in
 * one translation unit (injection_build.py). */
#define _GNU_SOURCE
#include <cuda.h>
#include <cupti.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <regex.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))
#define MAX_PARAMS 1024
#define MAX_POINTERS 1024
#define MAX_KEYS (1 << 16)
#define MAX_SKIPS 4096
#define MAX_MODULES 65536

/* ---- the driver and CUPTI, through dlsym ---------------------------------- */
typedef CUresult (*getName_t)(CUresult, const char **);
static struct {
    CUresult (*FuncGetParamInfo)(CUfunction, size_t, size_t *, size_t *);
    CUresult (*KernelGetParamInfo)(CUkernel, size_t, size_t *, size_t *);
    CUresult (*KernelGetFunction)(CUfunction *, CUkernel);
    CUresult (*FuncGetModule)(CUmodule *, CUfunction);
    CUresult (*FuncGetName)(const char **, CUfunction);
    CUresult (*KernelGetName)(const char **, CUkernel);
    CUresult (*PointerGetAttribute)(void *, CUpointer_attribute, CUdeviceptr);
    CUresult (*MemcpyDtoHAsync)(void *, CUdeviceptr, size_t, CUstream);
    CUresult (*MemcpyHtoDAsync)(CUdeviceptr, const void *, size_t, CUstream);
    CUresult (*StreamSynchronize)(CUstream);
    CUresult (*StreamIsCapturing)(CUstream, CUstreamCaptureStatus *);
    CUresult (*LaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                             unsigned, unsigned, CUstream, void **, void **);
    CUresult (*LaunchKernelEx)(const CUlaunchConfig *, CUfunction, void **, void **);
    CUresult (*LaunchCooperativeKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned,
                                        unsigned, unsigned, unsigned, CUstream, void **);
    CUresult (*ModuleGetGlobal)(CUdeviceptr *, size_t *, CUmodule, const char *);
    /* optional: where a runtime kernel's library is, and the device's arch */
    CUresult (*KernelGetLibrary)(CUlibrary *, CUkernel);
    CUresult (*ThreadExchangeStreamCaptureMode)(CUstreamCaptureMode *);
    CUresult (*CtxGetDevice)(CUdevice *);
    CUresult (*DeviceGetAttribute)(int *, CUdevice_attribute, CUdevice);
    /* graphs (injection_graphs.c): optional, a driver without them captures no graph */
    CUresult (*GraphGetNodes)(CUgraph, CUgraphNode *, size_t *);
    CUresult (*GraphClone)(CUgraph *, CUgraph);
    CUresult (*GraphDestroy)(CUgraph);
    CUresult (*GraphNodeGetType)(CUgraphNode, CUgraphNodeType *);
    CUresult (*GraphNodeGetDependencies)(CUgraphNode, CUgraphNode *, size_t *);
    CUresult (*GraphNodeGetDependencies2)(CUgraphNode, CUgraphNode *, CUgraphEdgeData *, size_t *);
    CUresult (*GraphChildGraphNodeGetGraph)(CUgraphNode, CUgraph *);
    CUresult (*GraphEventWaitNodeGetEvent)(CUgraphNode, CUevent *);
    CUresult (*StreamWaitEvent)(CUstream, CUevent, unsigned);
    CUresult (*GraphKernelNodeGetParams)(CUgraphNode, CUDA_KERNEL_NODE_PARAMS *);
    CUresult (*GraphKernelNodeGetAttribute)(CUgraphNode, CUkernelNodeAttrID, CUkernelNodeAttrValue *);
    CUresult (*GraphMemsetNodeGetParams)(CUgraphNode, CUDA_MEMSET_NODE_PARAMS *);
    CUresult (*GraphMemcpyNodeGetParams)(CUgraphNode, CUDA_MEMCPY3D *);
    CUresult (*MemsetD2D8Async)(CUdeviceptr, size_t, unsigned char, size_t, size_t, CUstream);
    CUresult (*MemsetD2D16Async)(CUdeviceptr, size_t, unsigned short, size_t, size_t, CUstream);
    CUresult (*MemsetD2D32Async)(CUdeviceptr, size_t, unsigned int, size_t, size_t, CUstream);
    CUresult (*Memcpy3DAsync)(const CUDA_MEMCPY3D *, CUstream);
    getName_t GetErrorName;
    CUptiResult (*Subscribe)(CUpti_SubscriberHandle *, CUpti_CallbackFunc, void *);
    CUptiResult (*EnableDomain)(uint32_t, CUpti_SubscriberHandle, CUpti_CallbackDomain);
    CUptiResult (*EnableCallback)(uint32_t, CUpti_SubscriberHandle, CUpti_CallbackDomain,
                                  CUpti_CallbackId);
    CUptiResult (*GetResultString)(CUptiResult, const char **);
} api;

/* ---- state ------------------------------------------------------------------ */
static char folder[4096];
static FILE *debug_log;
static int enabled;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static regex_t kernel_regex;
static int have_regex;
static long long opt_limit = -1, opt_skip, opt_max_launch = -1, opt_max_total = -1;
static long long seen, selected, captured, saved_bytes;
static uint64_t keys[MAX_KEYS];
static size_t key_count;
static struct { uint64_t hash; char *kernel; const char *reason; long long count; } skips[MAX_SKIPS];
static size_t skip_count;
static struct { CUmodule module; int id; } modules[MAX_MODULES];
static size_t module_count;
static char last_error[512];

static __thread int paused, inside;        /* the Triton hook's switch; our own launches */
static __thread int loaded_module = -1;    /* set by the module-loaded callback */

static void say(const char *format, ...) {
    char line[1024];
    va_list args;
    va_start(args, format);
    vsnprintf(line, sizeof line, format, args);
    va_end(args);
    if (debug_log) {
        fprintf(debug_log, "%s\n", line);
        fflush(debug_log);
    }
}

static void fail(const char *format, ...) {          /* one line on stderr, and the log */
    va_list args;
    va_start(args, format);
    vsnprintf(last_error, sizeof last_error, format, args);
    va_end(args);
    fprintf(stderr, "cubinrun capture (cupti, pid %d): %s\n", (int)getpid(), last_error);
    say("error: %s", last_error);
}

static int cu_ok(CUresult status, const char *call) {
    if (status == CUDA_SUCCESS) return 1;
    const char *name = "?";
    if (api.GetErrorName) api.GetErrorName(status, &name);
    fail("%s failed: %s (%d)", call, name, (int)status);
    return 0;
}

static int cupti_ok(CUptiResult status, const char *call) {
    if (status == CUPTI_SUCCESS) return 1;
    const char *text = "?";
    if (api.GetResultString) api.GetResultString(status, &text);
    fail("%s failed: %s (%d)", call, text, (int)status);
    return 0;
}

EXPORT void cubinrun_capture_pause(int on) { paused = on; }

/* ---- files -------------------------------------------------------------------- */
static int stopped;       /* a write failed (a full disk): nothing more is written */

static void stop_writing(void) {
    if (!stopped) fprintf(stderr, "cubinrun capture (cupti, pid %d): capture stopped: %s\n",
                          (int)getpid(), last_error);
    stopped = 1;
}

static int write_file(const char *path, const void *data, size_t size) {
    char partial[4200];
    if (stopped) return 0;
    snprintf(partial, sizeof partial, "%s.partial", path);
    FILE *f = fopen(partial, "wb");
    if (!f) { fail("cannot write %s: %s", partial, strerror(errno)); stop_writing(); return 0; }
    size_t done = size ? fwrite(data, 1, size, f) : 0;
    int closed = fclose(f);
    if (done != size || closed != 0) {
        fail("cannot write %s: %s", partial, strerror(errno));
        unlink(partial);
        stop_writing();
        return 0;
    }
    if (rename(partial, path) != 0) {
        fail("cannot rename %s: %s", partial, strerror(errno));
        stop_writing();
        return 0;
    }
    return 1;
}

static void json_string(FILE *f, const char *text) {
    fputc('"', f);
    for (const unsigned char *c = (const unsigned char *)text; *c; c++) {
        if (*c == '"' || *c == '\\') fprintf(f, "\\%c", *c);
        else if (*c < 0x20) fprintf(f, "\\u%04x", *c);
        else fputc(*c, f);
    }
    fputc('"', f);
}

static uint64_t fnv(uint64_t hash, const void *data, size_t size) {
    const unsigned char *p = data;
    for (size_t i = 0; i < size; i++) hash = (hash ^ p[i]) * 1099511628211ULL;
    return hash;
}

static void write_summary(void) {
    char path[4200], partial[4300];
    snprintf(path, sizeof path, "%s/summary.json", folder);
    snprintf(partial, sizeof partial, "%s.partial", path);
    FILE *f = fopen(partial, "w");
    if (!f) return;
    fprintf(f, "{\"source\": \"cupti\", \"pid\": %d, \"launches_seen\": %lld, \"captured\": %lld, "
               "\"saved_bytes\": %lld, \"error\": ", (int)getpid(), seen, captured, saved_bytes);
    if (last_error[0]) json_string(f, last_error); else fputs("null", f);
    fputs(", \"skipped\": [", f);
    for (size_t i = 0; i < skip_count; i++) {
        fputs(i ? ", {\"kernel\": " : "{\"kernel\": ", f);
        json_string(f, skips[i].kernel);
        fputs(", \"reason\": ", f);
        json_string(f, skips[i].reason);
        fprintf(f, ", \"count\": %lld}", skips[i].count);
    }
    fputs("]}\n", f);
    if (fclose(f) == 0) rename(partial, path); else unlink(partial);
}

static void note_skip(const char *kernel, const char *reason) {
    uint64_t hash = fnv(fnv(14695981039346656037ULL, kernel, strlen(kernel)), reason, strlen(reason));
    for (size_t i = 0; i < skip_count; i++)
        if (skips[i].hash == hash) { skips[i].count++; return; }
    if (skip_count == MAX_SKIPS) return;
    skips[skip_count].hash = hash;
    skips[skip_count].kernel = strdup(kernel);
    skips[skip_count].reason = reason;        /* always a literal */
    skips[skip_count].count = 1;
    if (!skips[skip_count].kernel) return;
    skip_count++;
    say("skipped %s: %s", kernel, reason);
    write_summary();
}

static int seen_before_or_remember(uint64_t key, int remember) {
    size_t slot = key & (MAX_KEYS - 1);
    for (size_t probe = 0; probe < MAX_KEYS; probe++, slot = (slot + 1) & (MAX_KEYS - 1)) {
        if (keys[slot] == key) return 1;
        if (keys[slot] == 0) {
            if (key_count * 2 >= MAX_KEYS) return 1;          /* full: a repeat, in effect */
            if (remember) {
                keys[slot] = key;
                key_count++;
            }
            return 0;
        }
    }
    return 1;
}

static int seen_before(uint64_t key) { return seen_before_or_remember(key, 1); }   /* and remember it */
static int known_key(uint64_t key) { return seen_before_or_remember(key, 0); }

/* ---- modules ---------------------------------------------------------------------- */
static void record_globals(unsigned id, const unsigned char *image, size_t size);

static void module_loaded(const CUpti_ModuleResourceData *data) {
    char path[4200];
    snprintf(path, sizeof path, "%s/modules/m%u.cubin", folder, data->moduleId);
    if (data->pCubin && data->cubinSize && write_file(path, data->pCubin, data->cubinSize))
        say("module %u: %zu bytes", data->moduleId, data->cubinSize);
    if (data->pCubin && data->cubinSize)
        record_globals(data->moduleId, (const unsigned char *)data->pCubin, data->cubinSize);
    loaded_module = (int)data->moduleId;
}

static void remember_module(CUmodule module, int id) {
    for (size_t i = 0; i < module_count; i++)
        if (modules[i].module == module) { modules[i].id = id; return; }
    if (module_count < MAX_MODULES) {
        modules[module_count].module = module;
        modules[module_count++].id = id;
    }
}

/* The module id of the launch's function, or -1, and its CUmodule in `handle` (NULL
 * when unknown). A module that loaded on this thread since the launch's enter (lazily,
 * for the launch or for cuKernelGetFunction here) is the function's. Else -1
 * (cubinrun then looks the kernel up by name in the process's modules). */
static int module_of(CUfunction f, CUmodule *handle) {
    CUmodule module = NULL;
    *handle = NULL;
    CUfunction function = f;
    if (api.FuncGetModule(&module, f) != CUDA_SUCCESS) {
        /* a CUkernel (the runtime's): its function in this context, which may load its module */
        if (api.KernelGetFunction((CUfunction *)&function, (CUkernel)f) != CUDA_SUCCESS ||
            api.FuncGetModule(&module, function) != CUDA_SUCCESS)
            return loaded_module;
    }
    *handle = module;
    if (loaded_module >= 0) remember_module(module, loaded_module);
    for (size_t i = 0; i < module_count; i++)
        if (modules[i].module == module) return modules[i].id;
    return -1;
}


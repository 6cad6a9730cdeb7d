/* cubinrun capture's CUPTI injection library, last part: the callback CUPTI
 * calls around each driver call it was asked for, and start-up
 * (InitializeInjection). Part of one translation unit (injection_build.py),
 * after injection_graphs.c. */

static int is_graph_instantiate(CUpti_CallbackId cbid) {
    return cbid == CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiate ||
           cbid == CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiate_v2 ||
           cbid == CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithFlags ||
           cbid == CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithParams ||
           cbid == CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithParams_ptsz;
}

/* Our copies and synchronizations are "unsafe" calls while some stream of the
 * program captures in global mode: this thread's mode is made relaxed around
 * them (cuThreadExchangeStreamCaptureMode), so they never break its capture. */
static CUstreamCaptureMode relaxed(void) {
    CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
    if (api.ThreadExchangeStreamCaptureMode) api.ThreadExchangeStreamCaptureMode(&mode);
    return mode;
}

static void restore_mode(CUstreamCaptureMode mode) {
    if (api.ThreadExchangeStreamCaptureMode) api.ThreadExchangeStreamCaptureMode(&mode);
}

/* Instantiation, destruction, update and launch of graphs; 1 when `cbid` is one. */
static int graph_call(CUpti_CallbackId cbid, const CUpti_CallbackData *info) {
    if (is_graph_instantiate(cbid) || cbid == CUPTI_DRIVER_TRACE_CBID_cuGraphExecUpdate_v2) {
        if (info->callbackSite != CUPTI_API_EXIT ||
            (info->functionReturnValue && *(const CUresult *)info->functionReturnValue != CUDA_SUCCESS))
            return 1;
        pthread_mutex_lock(&lock);
        if (cbid == CUPTI_DRIVER_TRACE_CBID_cuGraphExecUpdate_v2) {  /* the exec now runs hGraph */
            const cuGraphExecUpdate_v2_params *a = info->functionParams;
            graph_instantiated(a->hGraphExec, a->hGraph);
        } else {        /* every instantiate call starts (CUgraphExec *, CUgraph) */
            const cuGraphInstantiateWithFlags_params *a = info->functionParams;
            if (a->phGraphExec && *a->phGraphExec) graph_instantiated(*a->phGraphExec, a->hGraph);
        }
        pthread_mutex_unlock(&lock);
        return 1;
    }
    if (cbid == CUPTI_DRIVER_TRACE_CBID_cuGraphExecKernelNodeSetParams ||
        cbid == CUPTI_DRIVER_TRACE_CBID_cuGraphExecKernelNodeSetParams_v2 ||
        cbid == CUPTI_DRIVER_TRACE_CBID_cuGraphExecMemcpyNodeSetParams ||
        cbid == CUPTI_DRIVER_TRACE_CBID_cuGraphExecMemsetNodeSetParams ||
        cbid == CUPTI_DRIVER_TRACE_CBID_cuGraphExecNodeSetParams) {
        if (info->callbackSite == CUPTI_API_EXIT) {     /* each call's first parameter */
            pthread_mutex_lock(&lock);
            graph_exec_params_set(*(CUgraphExec const *)info->functionParams);
            pthread_mutex_unlock(&lock);
        }
        return 1;
    }
    if (cbid == CUPTI_DRIVER_TRACE_CBID_cuGraphExecDestroy) {
        if (info->callbackSite == CUPTI_API_ENTER) {
            pthread_mutex_lock(&lock);
            graph_exec_destroyed(((const cuGraphExecDestroy_params *)info->functionParams)->hGraphExec);
            pthread_mutex_unlock(&lock);
        }
        return 1;
    }
    if (cbid == CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch || cbid == CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz) {
        if (info->callbackSite == CUPTI_API_ENTER && !paused) {
            const cuGraphLaunch_params *a = info->functionParams;      /* _ptsz: the same fields */
            CUstream stream = a->hStream;
            if (!stream && cbid == CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz) stream = CU_STREAM_PER_THREAD;
            pthread_mutex_lock(&lock);
            CUstreamCaptureMode mode = relaxed();
            graph_launching(a->hGraph, stream);
            restore_mode(mode);
            pthread_mutex_unlock(&lock);
        }
        return 1;
    }
    return 0;
}

static void CUPTIAPI callback(void *user, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                              const void *data) {
    (void)user;
    if (!enabled) return;
    if (domain == CUPTI_CB_DOMAIN_RESOURCE) {
        /* no lock: a module may load lazily inside our own cuKernelGetFunction, with it held */
        if (cbid == CUPTI_CBID_RESOURCE_MODULE_LOADED)
            module_loaded((const CUpti_ModuleResourceData *)((const CUpti_ResourceData *)data)->resourceDescriptor);
        return;
    }
    if (inside) return;
    const CUpti_CallbackData *info = data;
    if (cbid == CUPTI_DRIVER_TRACE_CBID_cuModuleLoad || cbid == CUPTI_DRIVER_TRACE_CBID_cuModuleLoadData ||
        cbid == CUPTI_DRIVER_TRACE_CBID_cuModuleLoadDataEx ||
        cbid == CUPTI_DRIVER_TRACE_CBID_cuModuleLoadFatBinary) {
        if (info->callbackSite == CUPTI_API_ENTER) { loaded_module = -1; return; }
        CUmodule *module = *(CUmodule *const *)info->functionParams;   /* each call's first parameter */
        if (loaded_module >= 0 && module && *module) {
            pthread_mutex_lock(&lock);
            remember_module(*module, loaded_module);
            pthread_mutex_unlock(&lock);
        }
        return;
    }
    if (graph_call(cbid, info)) return;
    if (cbid == CUPTI_DRIVER_TRACE_CBID_cuLibraryLoadData ||
        cbid == CUPTI_DRIVER_TRACE_CBID_cuLibraryLoadFromFile) {
        if (info->callbackSite != CUPTI_API_EXIT ||
            (info->functionReturnValue && *(const CUresult *)info->functionReturnValue != CUDA_SUCCESS))
            return;
        pthread_mutex_lock(&lock);
        if (cbid == CUPTI_DRIVER_TRACE_CBID_cuLibraryLoadData) {
            const cuLibraryLoadData_params *a = info->functionParams;
            if (a->library) library_loaded(*a->library, a->code, NULL);
        } else {
            const cuLibraryLoadFromFile_params *a = info->functionParams;
            if (a->library) library_loaded(*a->library, NULL, a->fileName);
        }
        pthread_mutex_unlock(&lock);
        return;
    }
    if (paused) return;
    static __thread int capturing;
    if (info->callbackSite == CUPTI_API_ENTER) {
        loaded_module = -1;
        pthread_mutex_lock(&lock);
        CUstreamCaptureMode mode = relaxed();
        capturing = on_enter(cbid, info);
        restore_mode(mode);
        if (!capturing) pthread_mutex_unlock(&lock);    /* held until the exit otherwise */
    } else if (capturing) {
        capturing = 0;
        inside = 1;
        CUstreamCaptureMode mode = relaxed();
        on_exit_(info);
        restore_mode(mode);
        inside = 0;
        pthread_mutex_unlock(&lock);
    }
}

/* ---- start-up ------------------------------------------------------------------------ */
static long long env_number(const char *name, long long otherwise) {
    const char *text = getenv(name);
    if (!text || !*text) return otherwise;
    char *end;
    long long value = strtoll(text, &end, 10);
    return *end ? otherwise : value;
}

static void *symbol(void *library, const char *name) {
    void *found = dlsym(library, name);
    if (!found) fail("%s not found: %s", name, dlerror());
    return found;
}

static int load_api(void) {
    void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (!cuda) cuda = dlopen("libcuda.so.1", RTLD_NOW);
    const char *cupti_path = getenv("CUBINRUN_CAPTURE_CUPTI");
    void *cupti = dlopen(cupti_path && *cupti_path ? cupti_path : "libcupti.so", RTLD_NOW);
    if (!cuda) { fail("libcuda.so.1 does not load: %s", dlerror()); return 0; }
    if (!cupti) { fail("libcupti does not load (%s): %s", cupti_path ? cupti_path : "", dlerror()); return 0; }
#define GET(lib, field, name) if (!(*(void **)&api.field = symbol(lib, name))) return 0
    GET(cuda, FuncGetParamInfo, "cuFuncGetParamInfo");
    GET(cuda, KernelGetParamInfo, "cuKernelGetParamInfo");
    GET(cuda, KernelGetFunction, "cuKernelGetFunction");
    GET(cuda, FuncGetModule, "cuFuncGetModule");
    GET(cuda, FuncGetName, "cuFuncGetName");
    GET(cuda, KernelGetName, "cuKernelGetName");
    GET(cuda, PointerGetAttribute, "cuPointerGetAttribute");
    GET(cuda, MemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2");
    GET(cuda, MemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2");
    GET(cuda, StreamSynchronize, "cuStreamSynchronize");
    GET(cuda, StreamIsCapturing, "cuStreamIsCapturing");
    GET(cuda, LaunchKernel, "cuLaunchKernel");
    GET(cuda, LaunchKernelEx, "cuLaunchKernelEx");
    GET(cuda, LaunchCooperativeKernel, "cuLaunchCooperativeKernel");
    GET(cuda, GetErrorName, "cuGetErrorName");
    GET(cuda, ModuleGetGlobal, "cuModuleGetGlobal_v2");
#define OPTIONAL(field, name) *(void **)&api.field = dlsym(cuda, name)
    OPTIONAL(KernelGetLibrary, "cuKernelGetLibrary");
    OPTIONAL(ThreadExchangeStreamCaptureMode, "cuThreadExchangeStreamCaptureMode");
    OPTIONAL(CtxGetDevice, "cuCtxGetDevice");
    OPTIONAL(DeviceGetAttribute, "cuDeviceGetAttribute");
    OPTIONAL(GraphGetNodes, "cuGraphGetNodes");
    OPTIONAL(GraphClone, "cuGraphClone");
    OPTIONAL(GraphDestroy, "cuGraphDestroy");
    OPTIONAL(GraphNodeGetType, "cuGraphNodeGetType");
    OPTIONAL(GraphNodeGetDependencies, "cuGraphNodeGetDependencies");    /* v1: no edge data */
    OPTIONAL(GraphNodeGetDependencies2, "cuGraphNodeGetDependencies_v2");
    OPTIONAL(GraphChildGraphNodeGetGraph, "cuGraphChildGraphNodeGetGraph");
    OPTIONAL(GraphEventWaitNodeGetEvent, "cuGraphEventWaitNodeGetEvent");
    OPTIONAL(StreamWaitEvent, "cuStreamWaitEvent");
    OPTIONAL(GraphKernelNodeGetParams, "cuGraphKernelNodeGetParams_v2");
    OPTIONAL(GraphKernelNodeGetAttribute, "cuGraphKernelNodeGetAttribute");
    OPTIONAL(GraphMemsetNodeGetParams, "cuGraphMemsetNodeGetParams");
    OPTIONAL(GraphMemcpyNodeGetParams, "cuGraphMemcpyNodeGetParams");
    OPTIONAL(MemsetD2D8Async, "cuMemsetD2D8Async");
    OPTIONAL(MemsetD2D16Async, "cuMemsetD2D16Async");
    OPTIONAL(MemsetD2D32Async, "cuMemsetD2D32Async");
    OPTIONAL(Memcpy3DAsync, "cuMemcpy3DAsync_v2");
#undef OPTIONAL
    GET(cupti, Subscribe, "cuptiSubscribe");
    GET(cupti, EnableDomain, "cuptiEnableDomain");
    GET(cupti, EnableCallback, "cuptiEnableCallback");
    GET(cupti, GetResultString, "cuptiGetResultString");
#undef GET
    return 1;
}

static void at_exit(void) {
    /* never wait here: a thread still inside a capture holds the lock at exit */
    int locked = pthread_mutex_trylock(&lock) == 0;
    write_summary();
    if (locked) pthread_mutex_unlock(&lock);
}

EXPORT int InitializeInjection(void) {
    const char *root = getenv("CUBINRUN_CAPTURE_DIR");
    if (!root || !*root) return 1;
    snprintf(folder, sizeof folder, "%s/raw/cupti-%d", root, (int)getpid());
    char modules_dir[4200], libraries_dir[4200];
    snprintf(modules_dir, sizeof modules_dir, "%s/modules", folder);
    snprintf(libraries_dir, sizeof libraries_dir, "%s/libraries", folder);
    if ((mkdir(folder, 0777) != 0 && errno != EEXIST) || (mkdir(modules_dir, 0777) != 0 && errno != EEXIST) ||
        (mkdir(libraries_dir, 0777) != 0 && errno != EEXIST)) {
        fprintf(stderr, "cubinrun capture (cupti): cannot create %s: %s\n", modules_dir, strerror(errno));
        return 1;
    }
    if (env_number("CUBINRUN_CAPTURE_DEBUG", 0)) {
        char path[4200];
        snprintf(path, sizeof path, "%s/debug.log", folder);
        debug_log = fopen(path, "a");
    }
    const char *pattern = getenv("CUBINRUN_CAPTURE_KERNEL");
    if (pattern && *pattern) {
        if (regcomp(&kernel_regex, pattern, REG_EXTENDED | REG_NOSUB) != 0) {
            fail("--kernel %s is not an extended regular expression", pattern);
            write_summary();
            return 1;
        }
        have_regex = 1;
    }
    opt_limit = env_number("CUBINRUN_CAPTURE_LIMIT", -1);
    opt_skip = env_number("CUBINRUN_CAPTURE_SKIP", 0);
    opt_max_launch = env_number("CUBINRUN_CAPTURE_MAX_LAUNCH_BYTES", -1);
    opt_max_total = env_number("CUBINRUN_CAPTURE_MAX_TOTAL_BYTES", -1);
    if (!load_api()) { write_summary(); return 1; }
    CUpti_SubscriberHandle subscriber;
    if (!cupti_ok(api.Subscribe(&subscriber, callback, NULL), "cuptiSubscribe")) {
        fail("CUPTI did not attach (libcupti %s; CUBINRUN_CUPTI picks another, e.g. the "
             "toolkit's matching the driver)",
             getenv("CUBINRUN_CAPTURE_CUPTI") ? getenv("CUBINRUN_CAPTURE_CUPTI") : "libcupti.so");
        write_summary();
        return 1;
    }
    static const CUpti_CallbackId launches[] = {
        CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
        CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
        CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel,
        CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz,
        CUPTI_DRIVER_TRACE_CBID_cuModuleLoad, CUPTI_DRIVER_TRACE_CBID_cuModuleLoadData,
        CUPTI_DRIVER_TRACE_CBID_cuModuleLoadDataEx, CUPTI_DRIVER_TRACE_CBID_cuModuleLoadFatBinary,
        CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiate, CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiate_v2,
        CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithFlags,
        CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithParams,
        CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithParams_ptsz,
        CUPTI_DRIVER_TRACE_CBID_cuGraphExecUpdate_v2, CUPTI_DRIVER_TRACE_CBID_cuGraphExecDestroy,
        CUPTI_DRIVER_TRACE_CBID_cuGraphExecKernelNodeSetParams,
        CUPTI_DRIVER_TRACE_CBID_cuGraphExecKernelNodeSetParams_v2,
        CUPTI_DRIVER_TRACE_CBID_cuGraphExecMemcpyNodeSetParams,
        CUPTI_DRIVER_TRACE_CBID_cuGraphExecMemsetNodeSetParams,
        CUPTI_DRIVER_TRACE_CBID_cuGraphExecNodeSetParams,
        CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch, CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz,
        CUPTI_DRIVER_TRACE_CBID_cuLibraryLoadData, CUPTI_DRIVER_TRACE_CBID_cuLibraryLoadFromFile};
    for (size_t i = 0; i < sizeof launches / sizeof launches[0]; i++)
        if (!cupti_ok(api.EnableCallback(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API, launches[i]),
                      "cuptiEnableCallback")) { write_summary(); return 1; }
    if (!cupti_ok(api.EnableCallback(1, subscriber, CUPTI_CB_DOMAIN_RESOURCE,
                                     CUPTI_CBID_RESOURCE_MODULE_LOADED), "cuptiEnableCallback(resource)")) {
        write_summary();
        return 1;
    }
    enabled = 1;
    atexit(at_exit);
    say("capture started in pid %d", (int)getpid());
    write_summary();
    return 1;
}

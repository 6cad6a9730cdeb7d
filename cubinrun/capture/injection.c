/* cubinrun capture's CUPTI injection library, second part: one launch, what
 * is read and saved around it. It follows injection_base.c in one translation
 * unit (injection_build.py puts them together), whose state and helpers it
 * uses; the graph walk (injection_graphs.c) captures a graph's kernel nodes
 * with the same choose_launch and finish_launch.
 *
 * Parameters come as kernelParams (an array of pointers, one per parameter)
 * or through `extra` (CU_LAUNCH_PARAM_BUFFER_POINTER/SIZE: one buffer holding
 * them all, what cuBLASLt's kernels use); either way the kernel's own layout
 * (cuFuncGetParamInfo / cuKernelGetParamInfo) says where each one is, and an
 * `extra` buffer is split into them. */

/* ---- one launch --------------------------------------------------------------------- */
typedef struct { size_t offset, size; } Param;
typedef struct { int param; size_t offset; int region; size_t at; } Pointer;
/* A region is memory a pointer reaches (from the lowest pointer into an allocation
 * to its end), or a module global (`global` names it), or memory a pointer loaded
 * from another region reaches (`loaded`: its region and offset there). */
typedef struct {
    CUdeviceptr start, end;
    unsigned char *before, *after, *again;
    const char *global;
    int loaded_from;
    size_t loaded_at;
} Region;

typedef struct {
    CUpti_CallbackId cbid;
    const char *name;
    CUfunction f;
    unsigned grid[3], block[3], shared, cluster[3];
    int cooperative;
    CUstream stream;
    void **params;
    void **extra;               /* the launch's `extra` when its parameters come that way */
    const unsigned char *extra_buffer;
    size_t extra_size;
    void *param_at[MAX_PARAMS]; /* each parameter's place in the `extra` buffer */
    const CUlaunchConfig *config;
    CUmodule module_handle;
    int module;
    int library;                /* its library's saved image (libraries/lN.bin), or -1 */
    size_t globals_left_out;    /* module globals past MAX_GLOBALS_PER_LAUNCH */
    const char *graph;          /* "EXEC/NODE" of a graph's kernel node, else NULL */
    char graph_text[64];
    Param param[MAX_PARAMS];
    size_t nparams;
    Pointer pointer[MAX_POINTERS];
    size_t npointers;
    Region region[MAX_POINTERS];
    size_t nregions;
    uint64_t key;
} Launch;

static void free_regions(Launch *l) {
    for (size_t i = 0; i < l->nregions; i++) {
        free(l->region[i].before);
        free(l->region[i].after);
        free(l->region[i].again);
        l->region[i].before = l->region[i].after = l->region[i].again = NULL;
    }
}

/* The `extra` array's buffer: 0 when it holds anything else. */
static int read_extra(Launch *l, void **extra) {
    l->extra = extra;
    l->extra_buffer = NULL;
    l->extra_size = 0;
    if (!extra) return 1;
    int have_size = 0;
    for (size_t i = 0; i < 64 && extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
        if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER) l->extra_buffer = extra[i + 1];
        else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE) {
            l->extra_size = *(const size_t *)extra[i + 1];
            have_size = 1;
        } else return 0;
    }
    return l->extra_buffer != NULL && have_size;
}

static void reset_launch(Launch *l) {
    memset(l->cluster, 0, sizeof l->cluster);
    l->cooperative = 0;
    l->config = NULL;
    l->extra = NULL;
    l->extra_buffer = NULL;
    l->extra_size = 0;
    l->graph = NULL;
    l->module = -1;
    l->library = -1;
    l->module_handle = NULL;
    l->globals_left_out = 0;
}

/* 0: its `extra` holds something other than a parameter buffer. */
static int read_launch(CUpti_CallbackId cbid, const void *p, Launch *l) {
    reset_launch(l);
    l->cbid = cbid;
    if (cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel || cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz) {
        const cuLaunchKernel_params *a = p;
        l->f = a->f; l->stream = a->hStream; l->params = a->kernelParams;
        l->grid[0] = a->gridDimX; l->grid[1] = a->gridDimY; l->grid[2] = a->gridDimZ;
        l->block[0] = a->blockDimX; l->block[1] = a->blockDimY; l->block[2] = a->blockDimZ;
        l->shared = a->sharedMemBytes;
        return read_extra(l, a->extra);
    }
    if (cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel ||
        cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz) {
        const cuLaunchCooperativeKernel_params *a = p;
        l->f = a->f; l->stream = a->hStream; l->params = a->kernelParams;
        l->grid[0] = a->gridDimX; l->grid[1] = a->gridDimY; l->grid[2] = a->gridDimZ;
        l->block[0] = a->blockDimX; l->block[1] = a->blockDimY; l->block[2] = a->blockDimZ;
        l->shared = a->sharedMemBytes;
        l->cooperative = 1;
        return 1;
    }
    const cuLaunchKernelEx_params *a = p;          /* cuLaunchKernelEx and _ptsz */
    const CUlaunchConfig *c = a->config;
    l->f = a->f; l->params = a->kernelParams; l->config = c;
    l->stream = c->hStream;
    l->grid[0] = c->gridDimX; l->grid[1] = c->gridDimY; l->grid[2] = c->gridDimZ;
    l->block[0] = c->blockDimX; l->block[1] = c->blockDimY; l->block[2] = c->blockDimZ;
    l->shared = c->sharedMemBytes;
    for (unsigned i = 0; i < c->numAttrs; i++) {
        if (c->attrs[i].id == CU_LAUNCH_ATTRIBUTE_COOPERATIVE && c->attrs[i].value.cooperative)
            l->cooperative = 1;
        if (c->attrs[i].id == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION) {
            l->cluster[0] = c->attrs[i].value.clusterDim.x;
            l->cluster[1] = c->attrs[i].value.clusterDim.y;
            l->cluster[2] = c->attrs[i].value.clusterDim.z;
        }
    }
    return read_extra(l, a->extra);
}

static const char *read_params(Launch *l) {
    l->nparams = 0;
    int as_kernel = 0;
    for (size_t i = 0; i < MAX_PARAMS; i++) {
        size_t offset, size;
        CUresult status = as_kernel ? api.KernelGetParamInfo((CUkernel)l->f, i, &offset, &size)
                                    : api.FuncGetParamInfo(l->f, i, &offset, &size);
        if (status == CUDA_ERROR_INVALID_HANDLE && i == 0 && !as_kernel) {
            as_kernel = 1;          /* the runtime launches CUkernels */
            i--;
            continue;
        }
        if (status == CUDA_ERROR_INVALID_VALUE) return NULL;      /* past the last one */
        if (status != CUDA_SUCCESS && i > 0) {      /* past the last one, said otherwise */
            say("%s: parameter %zu: error %d taken as the end", l->name, i, (int)status);
            return NULL;
        }
        if (!cu_ok(status, as_kernel ? "cuKernelGetParamInfo" : "cuFuncGetParamInfo"))
            return "its parameters could not be read (cuFuncGetParamInfo)";
        l->param[l->nparams].offset = offset;
        l->param[l->nparams++].size = size;
    }
    return "more than 1024 parameters";
}

/* Parameters through `extra`: each one's place in the buffer, as kernelParams would
 * point to it. */
static const char *bind_extra(Launch *l) {
    if (!l->extra) return NULL;
    for (size_t i = 0; i < l->nparams; i++) {
        if (l->param[i].offset + l->param[i].size > l->extra_size)
            return "the `extra` buffer is smaller than the kernel's parameters";
        l->param_at[i] = (void *)(l->extra_buffer + l->param[i].offset);
    }
    l->params = l->param_at;
    return NULL;
}

static int region_of(Launch *l, CUdeviceptr start, CUdeviceptr end, CUdeviceptr pointer) {
    for (size_t r = 0; r < l->nregions; r++) {
        if (l->region[r].end == end && !l->region[r].global) {
            if (pointer < l->region[r].start) l->region[r].start = pointer;
            return (int)r;
        }
    }
    (void)start;
    l->region[l->nregions].start = pointer;       /* from the lowest pointer, not the allocation's start */
    l->region[l->nregions].end = end;
    l->region[l->nregions].before = l->region[l->nregions].after = l->region[l->nregions].again = NULL;
    l->region[l->nregions].global = NULL;
    l->region[l->nregions].loaded_from = -1;
    return (int)l->nregions++;
}

static const char *find_pointers(Launch *l) {
    l->npointers = l->nregions = 0;
    for (size_t i = 0; i < l->nparams; i++) {
        for (size_t w = 0; w + 8 <= l->param[i].size; w += 8) {
            CUdeviceptr value, start;
            size_t size;
            memcpy(&value, (const char *)l->params[i] + w, 8);
            if (value == 0) continue;
            if (api.PointerGetAttribute(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, value) != CUDA_SUCCESS)
                continue;                  /* a number, not a pointer */
            if (!cu_ok(api.PointerGetAttribute(&size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, value),
                       "cuPointerGetAttribute(RANGE_SIZE)"))
                return "a pointer's allocation size could not be read";
            if (l->npointers == MAX_POINTERS || l->nregions == MAX_POINTERS)
                return "more than 1024 pointers";
            Pointer *p = &l->pointer[l->npointers++];
            p->param = (int)i;
            p->offset = w;
            p->region = region_of(l, start, start + size, value);
        }
    }
    for (size_t k = 0; k < l->npointers; k++) {
        CUdeviceptr value;
        memcpy(&value, (const char *)l->params[l->pointer[k].param] + l->pointer[k].offset, 8);
        l->pointer[k].at = value - l->region[l->pointer[k].region].start;
    }
    return NULL;
}

static uint64_t launch_key(const Launch *l) {
    uint64_t h = fnv(14695981039346656037ULL, l->name, strlen(l->name));
    h = fnv(h, l->grid, sizeof l->grid);
    h = fnv(h, l->block, sizeof l->block);
    h = fnv(h, &l->shared, sizeof l->shared);
    for (size_t r = 0; r < l->nregions; r++) {
        uint64_t size = l->region[r].end - l->region[r].start;
        h = fnv(h, &size, sizeof size);
    }
    return h ? h : 1;
}

static size_t region_bytes(const Launch *l) {
    size_t total = 0;
    for (size_t r = 0; r < l->nregions; r++) total += l->region[r].end - l->region[r].start;
    return total;
}

static int copy_regions(Launch *l, int which) {     /* 0 before, 1 after, 2 again */
    for (size_t r = 0; r < l->nregions; r++) {
        size_t size = l->region[r].end - l->region[r].start;
        unsigned char *host = malloc(size ? size : 1);
        if (!host) { fail("out of host memory for %zu bytes", size); return 0; }
        if (which == 0) l->region[r].before = host;
        else if (which == 1) l->region[r].after = host;
        else l->region[r].again = host;
        if (size && !cu_ok(api.MemcpyDtoHAsync(host, l->region[r].start, size, l->stream), "cuMemcpyDtoHAsync"))
            return 0;
    }
    return cu_ok(api.StreamSynchronize(l->stream), "cuStreamSynchronize");
}

static int restore_regions(Launch *l, int which) {
    for (size_t r = 0; r < l->nregions; r++) {
        size_t size = l->region[r].end - l->region[r].start;
        const unsigned char *host = which == 0 ? l->region[r].before : l->region[r].after;
        if (size && !cu_ok(api.MemcpyHtoDAsync(l->region[r].start, host, size, l->stream), "cuMemcpyHtoDAsync"))
            return 0;
    }
    return cu_ok(api.StreamSynchronize(l->stream), "cuStreamSynchronize");
}

static CUresult launch_again(const Launch *l) {
    inside = 1;
    CUresult status;
    void **params = l->extra ? NULL : l->params;
    if (l->config) status = api.LaunchKernelEx(l->config, l->f, params, l->extra);
    else if (l->cooperative)
        status = api.LaunchCooperativeKernel(l->f, l->grid[0], l->grid[1], l->grid[2], l->block[0],
                                             l->block[1], l->block[2], l->shared, l->stream, l->params);
    else
        status = api.LaunchKernel(l->f, l->grid[0], l->grid[1], l->grid[2], l->block[0], l->block[1],
                                  l->block[2], l->shared, l->stream, params, l->extra);
    inside = 0;
    return status;
}

static int differs(const Launch *l, int which) {   /* after vs before (0) or again vs after (1) */
    for (size_t r = 0; r < l->nregions; r++) {
        size_t size = l->region[r].end - l->region[r].start;
        const unsigned char *a = which ? l->region[r].again : l->region[r].after;
        const unsigned char *b = which ? l->region[r].after : l->region[r].before;
        if (memcmp(a, b, size)) return 1;
    }
    return 0;
}

static void write_loaded(FILE *f);          /* injection_loaded.c */

/* The device's arch ("sm_90"), asked once: a saved fatbin holds several. */
static const char *device_arch(void) {
    static char arch[16];
    CUdevice device;
    int major, minor;
    if (!arch[0] && api.CtxGetDevice && api.DeviceGetAttribute &&
        api.CtxGetDevice(&device) == CUDA_SUCCESS &&
        api.DeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device) == CUDA_SUCCESS &&
        api.DeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device) == CUDA_SUCCESS)
        snprintf(arch, sizeof arch, "sm_%d%d", major, minor);
    return arch[0] ? arch : NULL;
}

static int write_record(Launch *l, int module, int deterministic) {
    char dir[4200], path[4400];
    snprintf(dir, sizeof dir, "%s/%05lld", folder, captured);
    if (mkdir(dir, 0777) != 0) {
        fail("cannot create %s: %s", dir, strerror(errno));
        stop_writing();
        return 0;
    }
    long long bytes = 0;
    for (size_t r = 0; r < l->nregions; r++) {
        size_t size = l->region[r].end - l->region[r].start;
        snprintf(path, sizeof path, "%s/r%zu.before", dir, r);
        if (!write_file(path, l->region[r].before, size)) return 0;
        bytes += size;
        if (memcmp(l->region[r].after, l->region[r].before, size)) {
            snprintf(path, sizeof path, "%s/r%zu.after", dir, r);
            if (!write_file(path, l->region[r].after, size)) return 0;
            bytes += size;
        }
        if (l->region[r].again && memcmp(l->region[r].again, l->region[r].after, size)) {
            snprintf(path, sizeof path, "%s/r%zu.again", dir, r);
            if (!write_file(path, l->region[r].again, size)) return 0;
        }
    }
    snprintf(path, sizeof path, "%s/record.json.partial", dir);
    FILE *f = fopen(path, "w");
    if (!f) { fail("cannot write %s: %s", path, strerror(errno)); stop_writing(); return 0; }
    fprintf(f, "{\"source\": \"cupti\", \"pid\": %d, \"program_launch\": %lld, \"kernel\": ",
            (int)getpid(), seen);
    json_string(f, l->name);
    if (module >= 0) fprintf(f, ", \"module\": \"modules/m%d.cubin\"", module);
    else fputs(", \"module\": null", f);
    if (l->library >= 0) fprintf(f, ", \"library\": \"libraries/l%d.bin\"", l->library);
    else fputs(", \"library\": null", f);
    fputs(", \"arch\": ", f);
    if (device_arch()) json_string(f, device_arch()); else fputs("null", f);
    fprintf(f, ", \"key\": \"%016llx\", \"grid\": [%u, %u, %u], \"block\": [%u, %u, %u], "
               "\"shared\": %u, \"cooperative\": %s, \"cluster\": [%u, %u, %u], \"deterministic\": %s",
            (unsigned long long)l->key, l->grid[0], l->grid[1], l->grid[2], l->block[0], l->block[1],
            l->block[2], l->shared, l->cooperative ? "true" : "false", l->cluster[0], l->cluster[1],
            l->cluster[2], deterministic < 0 ? "null" : deterministic ? "true" : "false");
    fprintf(f, ", \"extra\": %s, \"globals_left_out\": %zu, \"graph\": ",
            l->extra ? "true" : "false", l->globals_left_out);
    if (l->graph) json_string(f, l->graph); else fputs("null", f);
    write_loaded(f);
    fputs(", \"params\": [", f);
    for (size_t i = 0; i < l->nparams; i++) {
        fprintf(f, "%s{\"offset\": %zu, \"size\": %zu, \"hex\": \"", i ? ", " : "",
                l->param[i].offset, l->param[i].size);
        for (size_t b = 0; b < l->param[i].size; b++)
            fprintf(f, "%02x", ((const unsigned char *)l->params[i])[b]);
        fputs("\"}", f);
    }
    fputs("], \"pointers\": [", f);
    for (size_t k = 0; k < l->npointers; k++)
        fprintf(f, "%s{\"param\": %d, \"offset\": %zu, \"region\": %d, \"at\": %zu}", k ? ", " : "",
                l->pointer[k].param, l->pointer[k].offset, l->pointer[k].region, l->pointer[k].at);
    fputs("], \"regions\": [", f);
    for (size_t r = 0; r < l->nregions; r++) {
        size_t size = l->region[r].end - l->region[r].start;
        int changed = memcmp(l->region[r].after, l->region[r].before, size) != 0;
        int other = l->region[r].again && memcmp(l->region[r].again, l->region[r].after, size);
        fprintf(f, "%s{\"size\": %zu, \"before\": \"r%zu.before\", \"after\": ", r ? ", " : "", size, r);
        if (changed) fprintf(f, "\"r%zu.after\"", r); else fputs("null", f);
        fputs(", \"again\": ", f);
        if (other) fprintf(f, "\"r%zu.again\"", r); else fputs("null", f);
        fputs(", \"global\": ", f);
        if (l->region[r].global) json_string(f, l->region[r].global); else fputs("null", f);
        fputc('}', f);
    }
    fputs("]}\n", f);
    char final_path[4400];
    snprintf(final_path, sizeof final_path, "%s/record.json", dir);
    if (fclose(f) != 0 || rename(path, final_path) != 0) {
        fail("cannot write %s: %s", final_path, strerror(errno));
        stop_writing();
        return 0;
    }
    saved_bytes += bytes;
    captured++;
    say("captured %s grid [%u, %u, %u] block [%u, %u, %u]", l->name, l->grid[0], l->grid[1],
        l->grid[2], l->block[0], l->block[1], l->block[2]);
    write_summary();
    return 1;
}


static void add_globals(Launch *l);          /* injection_globals.c */
static int library_of(Launch *l);           /* injection_libraries.c */
static int follow_loaded_pointers(Launch *l);   /* injection_loaded.c */
static void drop_overwritten_pointers(const Launch *l);

static Launch current;        /* under `lock`: one launch is captured at a time */

/* Whether to capture the launch `l` (read_launch filled it, and its name): its
 * parameters, pointers and globals read, the selection applied, its inputs saved.
 * 1: capture it (finish_launch after it ran); 0: left out, the reason noted. */
static int choose_launch(Launch *l) {
    if (have_regex && regexec(&kernel_regex, l->name, 0, NULL, 0) != 0) {
        note_skip(l->name, "--kernel does not match");
        return 0;
    }
    const char *why = read_params(l);
    if (!why) why = bind_extra(l);
    if (!why && !l->params && l->nparams) why = "no parameters given (neither kernelParams nor `extra`)";
    if (!why) why = find_pointers(l);
    if (why) { note_skip(l->name, why); return 0; }
    l->key = launch_key(l);         /* before the globals: a repeat costs no lookup of them */
    if (seen_before(l->key)) {
        note_skip(l->name, "a launch of the same kernel, grid and sizes was already seen");
        return 0;
    }
    selected++;
    if (selected <= opt_skip) { note_skip(l->name, "--skip"); return 0; }
    if (opt_limit >= 0 && captured >= opt_limit) { note_skip(l->name, "--limit"); return 0; }
    l->module = module_of(l->f, &l->module_handle);
    add_globals(l);
    long long need = 2 * (long long)region_bytes(l);
    if (opt_max_launch >= 0 && need > opt_max_launch) {
        note_skip(l->name, "--max-bytes: more than allowed for one launch");
        return 0;
    }
    if (opt_max_total >= 0 && saved_bytes + need > opt_max_total) {
        note_skip(l->name, "--max-bytes: more than allowed in all");
        return 0;
    }
    if (stopped) { note_skip(l->name, "capture stopped (a write failed)"); return 0; }
    l->library = library_of(l);     /* saved once, for a launch that is captured */
    if (!copy_regions(l, 0) || !follow_loaded_pointers(l)) { free_regions(l); return 0; }
    return 1;
}

/* After the launch (`status` its result): save what it left, launch once more from
 * the inputs, put its results back, write the record. */
static void finish_launch(Launch *l, CUresult status) {
    int deterministic = -1;
    if (status != CUDA_SUCCESS) {
        note_skip(l->name, "the launch failed");
        free_regions(l);
        return;
    }
    if (l->module < 0) l->module = module_of(l->f, &l->module_handle);
    if (!copy_regions(l, 1)) { free_regions(l); return; }
    drop_overwritten_pointers(l);
    if (differs(l, 0)) {
        if (!restore_regions(l, 0)) goto restore;
        if (!cu_ok(launch_again(l), "launching again (determinism)")) goto restore;
        if (!copy_regions(l, 2)) goto restore;
        deterministic = !differs(l, 1);
restore:
        if (!restore_regions(l, 1)) fail("the program's memory after %s could not be put back", l->name);
    }
    write_record(l, l->module, deterministic);
    free_regions(l);
}

/* A launch's enter: 1 to capture it at its exit. */
static int on_enter(CUpti_CallbackId cbid, const CUpti_CallbackData *info) {
    Launch *l = &current;
    seen++;
    if (!read_launch(cbid, info->functionParams, l)) {
        note_skip(info->symbolName ? info->symbolName : "?",
                  "its `extra` holds more than a parameter buffer");
        return 0;
    }
    l->name = info->symbolName;
    if (!l->name && api.FuncGetName(&l->name, l->f) != CUDA_SUCCESS &&
        api.KernelGetName(&l->name, (CUkernel)l->f) != CUDA_SUCCESS)
        l->name = NULL;                     /* CUPTI gave none, nor did the driver */
    if (!l->name) l->name = "?";
    if (!l->stream && (cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz ||
                       cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz ||
                       cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz))
        l->stream = CU_STREAM_PER_THREAD;           /* our copies go where the launch went */
    CUstreamCaptureStatus capturing = CU_STREAM_CAPTURE_STATUS_NONE;
    if (!cu_ok(api.StreamIsCapturing(l->stream, &capturing), "cuStreamIsCapturing")) return 0;
    if (capturing != CU_STREAM_CAPTURE_STATUS_NONE) {
        /* its graph's first launch runs it, and captures it then (injection_graphs.c) */
        note_skip(l->name, "launched into a CUDA graph being captured (captured when the "
                           "graph is launched)");
        return 0;
    }
    return choose_launch(l);
}

static void on_exit_(const CUpti_CallbackData *info) {
    CUresult status = info->functionReturnValue ? *(const CUresult *)info->functionReturnValue
                                                : CUDA_SUCCESS;
    finish_launch(&current, status);
}

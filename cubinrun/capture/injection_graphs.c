/* cubinrun capture's CUPTI injection library: launches inside CUDA graphs.
 * Part of one translation unit (injection_build.py), after injection.c and
 * injection_globals.c.
 *
 * A kernel launched into a stream being captured only becomes a node: its
 * buffers hold nothing yet. What the kernel reads is there when the graph
 * runs, so capture happens at the first cuGraphLaunch of each executable graph
 * (cuGraphInstantiate* tells which graph it was made from; a clone of it is
 * kept, since a program may destroy its graph once instantiated, as PyTorch's
 * CUDAGraph does), before the launch itself:
 *   1. the source graph's nodes (cuGraphGetNodes) are put in dependency order;
 *   2. every region any kernel node reaches (its pointers' allocations and its
 *      module's globals) and every memset/memcpy destination is saved;
 *   3. the nodes run one at a time on the launch's stream, each kernel node
 *      captured as a launch of its own (choose_launch/finish_launch: inputs
 *      before, results after, the determinism re-run), memsets and copies
 *      done as the graph would, a wait on an event waited for on the stream
 *      (an event record is left to the graph's own launch); a child graph's
 *      nodes take its place, in their own order;
 *   4. the saved memory is put back, and the program's own cuGraphLaunch then
 *      runs the graph on exactly what it would have had.
 * The graph's work is thus done twice at its first launch (plus the copies);
 * later launches of the same executable graph cost nothing. A graph with
 * other nodes (host functions, memory nodes, conditionals), or whose memory
 * is over --max-bytes for one launch, is not walked: its kernel nodes are
 * listed as left out. */

#define MAX_EXECS 4096
#define MAX_NODES 4096
#define MAX_CHILD_DEPTH 8

/* graph: what the exec was made from (our clone when `cloned`, released once walked);
 * params_changed: the program set a node's parameters in the executable graph, which
 * its source graph (what the walk reads) does not show */
static struct {
    CUgraphExec exec;
    CUgraph graph;
    int cloned, walked, params_changed;
} execs[MAX_EXECS];
static size_t exec_count;
static Launch whole;            /* the memory of a whole graph, saved around the walk */
static CUlaunchAttribute node_attributes[2];
static CUlaunchConfig node_config;

static void release_graph(size_t i) {
    if (execs[i].graph && execs[i].cloned) api.GraphDestroy(execs[i].graph);
    execs[i].graph = NULL;
    execs[i].cloned = 0;
}

static void graph_instantiated(CUgraphExec exec, CUgraph graph) {
    size_t i = 0;
    while (i < exec_count && execs[i].exec != exec) i++;
    if (i == MAX_EXECS) return;
    if (i == exec_count) {
        exec_count++;
        execs[i].graph = NULL;
        execs[i].cloned = 0;
    }
    release_graph(i);
    execs[i].exec = exec;
    CUgraph clone;
    if (api.GraphClone && api.GraphDestroy && api.GraphClone(&clone, graph) == CUDA_SUCCESS) {
        execs[i].graph = clone;
        execs[i].cloned = 1;
    } else {
        execs[i].graph = graph;         /* the program's own: fine while it keeps it */
    }
    execs[i].walked = execs[i].params_changed = 0;
}

static void graph_exec_params_set(CUgraphExec exec) {
    for (size_t i = 0; i < exec_count; i++)
        if (execs[i].exec == exec) execs[i].params_changed = 1;
}

static void graph_exec_destroyed(CUgraphExec exec) {      /* its handle may come again */
    for (size_t i = 0; i < exec_count; i++)
        if (execs[i].exec == exec) {
            release_graph(i);
            execs[i] = execs[--exec_count];
            return;
        }
}

static int have_graph_api(void) {
    return api.GraphGetNodes && api.GraphNodeGetType && api.GraphKernelNodeGetParams &&
           (api.GraphNodeGetDependencies || api.GraphNodeGetDependencies2);
}

static CUresult dependencies(CUgraphNode node, CUgraphNode *found, size_t *count) {
    if (api.GraphNodeGetDependencies) return api.GraphNodeGetDependencies(node, found, count);
    return api.GraphNodeGetDependencies2(node, found, NULL, count);
}

/* The nodes of `graph` in an order that respects every dependency (Kahn's). */
static CUgraphNode *ordered_nodes(CUgraph graph, size_t *count) {
    size_t n = 0;
    if (!cu_ok(api.GraphGetNodes(graph, NULL, &n), "cuGraphGetNodes") || n == 0 || n > MAX_NODES)
        return NULL;
    CUgraphNode *nodes = calloc(n, sizeof *nodes), *order = calloc(n, sizeof *order),
                deps[64];
    int *placed = calloc(n, sizeof *placed);
    if (!nodes || !order || !placed) goto failed;
    if (!cu_ok(api.GraphGetNodes(graph, nodes, &n), "cuGraphGetNodes")) goto failed;
    size_t done = 0;
    while (done < n) {
        size_t before = done;
        for (size_t i = 0; i < n; i++) {
            if (placed[i]) continue;
            size_t k = 64;
            if (!cu_ok(dependencies(nodes[i], deps, &k), "cuGraphNodeGetDependencies"))
                goto failed;
            int ready = k <= 64;
            for (size_t d = 0; ready && d < k; d++)
                for (size_t j = 0; j < n; j++)
                    if (nodes[j] == deps[d] && !placed[j]) { ready = 0; break; }
            if (ready) { placed[i] = 1; order[done++] = nodes[i]; }
        }
        if (done == before) goto failed;            /* a cycle, or over 64 dependencies */
    }
    free(nodes);
    free(placed);
    *count = n;
    return order;
failed:
    free(nodes);
    free(order);
    free(placed);
    return NULL;
}

/* The nodes of `graph` in order, each child graph's nodes (in their own order) in
 * the child's place; NULL when a graph cannot be read or has too many nodes. */
static CUgraphNode *flat_nodes(CUgraph graph, size_t *count, int depth) {
    size_t n = 0;
    CUgraphNode *order = ordered_nodes(graph, &n);
    if (!order || depth == MAX_CHILD_DEPTH) { free(order); return NULL; }
    CUgraphNode *flat = NULL;
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        CUgraphNodeType type;
        CUgraph child;
        size_t child_count = 0;
        CUgraphNode *inner = NULL, *one = &order[i];
        if (api.GraphNodeGetType(order[i], &type) == CUDA_SUCCESS && type == CU_GRAPH_NODE_TYPE_GRAPH) {
            if (!api.GraphChildGraphNodeGetGraph ||
                api.GraphChildGraphNodeGetGraph(order[i], &child) != CUDA_SUCCESS ||
                !(inner = flat_nodes(child, &child_count, depth + 1)))
                goto failed;
            one = inner;
        } else {
            child_count = 1;
        }
        CUgraphNode *grown = total + child_count <= MAX_NODES
                                 ? realloc(flat, (total + child_count) * sizeof *flat) : NULL;
        if (!grown) { free(inner); goto failed; }
        flat = grown;
        memcpy(flat + total, one, child_count * sizeof *flat);
        total += child_count;
        free(inner);
    }
    free(order);
    *count = total;
    return flat;
failed:
    free(order);
    free(flat);
    return NULL;
}

/* `l` as the kernel node `node` launched on `stream`; 0 when its parameters cannot be read. */
static int node_launch(Launch *l, CUgraphNode node, CUstream stream) {
    CUDA_KERNEL_NODE_PARAMS p;
    memset(&p, 0, sizeof p);
    if (!cu_ok(api.GraphKernelNodeGetParams(node, &p), "cuGraphKernelNodeGetParams")) return 0;
    reset_launch(l);
    l->cbid = CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel;
    l->f = p.func ? p.func : (CUfunction)p.kern;      /* a CUkernel launches as a CUfunction */
    l->stream = stream;
    l->params = p.kernelParams;
    l->grid[0] = p.gridDimX; l->grid[1] = p.gridDimY; l->grid[2] = p.gridDimZ;
    l->block[0] = p.blockDimX; l->block[1] = p.blockDimY; l->block[2] = p.blockDimZ;
    l->shared = p.sharedMemBytes;
    if (!read_extra(l, p.extra)) return 0;
    /* a cluster or cooperative node launches as one (a cooperative kernel launched
       otherwise may never pass its grid sync) */
    CUkernelNodeAttrValue value;
    unsigned count = 0;
    if (api.GraphKernelNodeGetAttribute &&
        api.GraphKernelNodeGetAttribute(node, CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION, &value) == CUDA_SUCCESS &&
        value.clusterDim.x * value.clusterDim.y * value.clusterDim.z > 1) {
        l->cluster[0] = value.clusterDim.x;
        l->cluster[1] = value.clusterDim.y;
        l->cluster[2] = value.clusterDim.z;
        node_attributes[count].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
        node_attributes[count++].value = value;
    }
    if (api.GraphKernelNodeGetAttribute &&
        api.GraphKernelNodeGetAttribute(node, CU_LAUNCH_ATTRIBUTE_COOPERATIVE, &value) == CUDA_SUCCESS &&
        value.cooperative) {
        l->cooperative = 1;
        node_attributes[count].id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
        node_attributes[count++].value = value;
    }
    if (count) {
        memset(&node_config, 0, sizeof node_config);
        node_config.gridDimX = p.gridDimX; node_config.gridDimY = p.gridDimY;
        node_config.gridDimZ = p.gridDimZ;
        node_config.blockDimX = p.blockDimX; node_config.blockDimY = p.blockDimY;
        node_config.blockDimZ = p.blockDimZ;
        node_config.sharedMemBytes = p.sharedMemBytes;
        node_config.hStream = stream;
        node_config.attrs = node_attributes;
        node_config.numAttrs = count;
        l->config = &node_config;
    }
    l->name = NULL;
    if (api.FuncGetName(&l->name, l->f) != CUDA_SUCCESS &&
        api.KernelGetName(&l->name, (CUkernel)l->f) != CUDA_SUCCESS)
        l->name = NULL;
    if (!l->name) l->name = "?";
    return 1;
}

static void keep_region(CUdeviceptr start, CUdeviceptr end) {
    for (size_t r = 0; r < whole.nregions; r++)
        if (whole.region[r].end == end) {
            if (start < whole.region[r].start) whole.region[r].start = start;
            return;
        }
    if (whole.nregions == MAX_POINTERS) return;
    Region *r = &whole.region[whole.nregions++];
    memset(r, 0, sizeof *r);
    r->start = start;
    r->end = end;
    r->loaded_from = -1;
}

static void keep_allocation(CUdeviceptr pointer) {      /* from `pointer` to its allocation's end */
    CUdeviceptr start;
    size_t size;
    if (api.PointerGetAttribute(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, pointer) == CUDA_SUCCESS &&
        api.PointerGetAttribute(&size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, pointer) == CUDA_SUCCESS)
        keep_region(pointer, start + size);
}

/* Every node is one this walk can run; the memory they may change, in `whole`;
 * `wanted`: some kernel node would be captured (else the walk is not worth its cost). */
static const char *plan_walk(CUgraphNode *nodes, size_t n, CUstream stream, int *wanted) {
    whole.nregions = 0;
    whole.stream = stream;
    *wanted = 0;
    for (size_t i = 0; i < n; i++) {
        CUgraphNodeType type;
        if (!cu_ok(api.GraphNodeGetType(nodes[i], &type), "cuGraphNodeGetType"))
            return "its nodes could not be read";
        if (type == CU_GRAPH_NODE_TYPE_KERNEL) {
            Launch *l = &current;
            if (!node_launch(l, nodes[i], stream)) return "a kernel node's parameters could not be read";
            if (read_params(l) || bind_extra(l) || (!l->params && l->nparams) || find_pointers(l))
                continue;
            if (!known_key(launch_key(l)) &&
                !(have_regex && regexec(&kernel_regex, l->name, 0, NULL, 0) != 0))
                *wanted = 1;
            l->module = module_of(l->f, &l->module_handle);
            add_globals(l);
            for (size_t r = 0; r < l->nregions; r++) keep_region(l->region[r].start, l->region[r].end);
        } else if (type == CU_GRAPH_NODE_TYPE_MEMSET && api.GraphMemsetNodeGetParams) {
            CUDA_MEMSET_NODE_PARAMS m;
            if (!cu_ok(api.GraphMemsetNodeGetParams(nodes[i], &m), "cuGraphMemsetNodeGetParams"))
                return "a memset node could not be read";
            keep_allocation(m.dst);
        } else if (type == CU_GRAPH_NODE_TYPE_MEMCPY && api.GraphMemcpyNodeGetParams) {
            CUDA_MEMCPY3D m;
            if (!cu_ok(api.GraphMemcpyNodeGetParams(nodes[i], &m), "cuGraphMemcpyNodeGetParams"))
                return "a memcpy node could not be read";
            if (m.dstMemoryType != CU_MEMORYTYPE_DEVICE && m.dstMemoryType != CU_MEMORYTYPE_UNIFIED)
                return "a graph with a copy to host or array memory";
            keep_allocation(m.dstDevice);
        } else if (type == CU_GRAPH_NODE_TYPE_WAIT_EVENT) {
            if (!api.GraphEventWaitNodeGetEvent || !api.StreamWaitEvent)
                return "a graph that waits on an event (the driver lacks the calls)";
        } else if (type != CU_GRAPH_NODE_TYPE_EMPTY && type != CU_GRAPH_NODE_TYPE_EVENT_RECORD) {
            return "a graph with host, memory or conditional nodes";
        }
    }
    if (whole.nregions == MAX_POINTERS) return "a graph that reaches more than 1024 allocations";
    if (opt_max_launch >= 0 && (long long)region_bytes(&whole) > opt_max_launch)
        return "--max-bytes: the graph's memory is more than allowed for one launch";
    return NULL;
}

static CUresult run_copy_node(CUgraphNode node, CUgraphNodeType type, CUstream stream) {
    if (type == CU_GRAPH_NODE_TYPE_EVENT_RECORD) return CUDA_SUCCESS;   /* the graph's launch records it */
    if (type == CU_GRAPH_NODE_TYPE_WAIT_EVENT) {
        CUevent event;
        CUresult status = api.GraphEventWaitNodeGetEvent(node, &event);
        return status != CUDA_SUCCESS ? status : api.StreamWaitEvent(stream, event, 0);
    }
    if (type == CU_GRAPH_NODE_TYPE_MEMSET) {
        CUDA_MEMSET_NODE_PARAMS m;
        CUresult status = api.GraphMemsetNodeGetParams(node, &m);
        if (status != CUDA_SUCCESS) return status;
        if (m.elementSize == 1)
            return api.MemsetD2D8Async(m.dst, m.pitch, (unsigned char)m.value, m.width, m.height, stream);
        if (m.elementSize == 2)
            return api.MemsetD2D16Async(m.dst, m.pitch, (unsigned short)m.value, m.width, m.height, stream);
        return api.MemsetD2D32Async(m.dst, m.pitch, m.value, m.width, m.height, stream);
    }
    CUDA_MEMCPY3D m;
    CUresult status = api.GraphMemcpyNodeGetParams(node, &m);
    return status != CUDA_SUCCESS ? status : api.Memcpy3DAsync(&m, stream);
}

static void leave_out_kernel_nodes(CUgraphNode *nodes, size_t n, CUstream stream, const char *why) {
    for (size_t i = 0; i < n; i++) {
        CUgraphNodeType type;
        if (api.GraphNodeGetType(nodes[i], &type) == CUDA_SUCCESS && type == CU_GRAPH_NODE_TYPE_KERNEL &&
            node_launch(&current, nodes[i], stream)) {
            seen++;
            note_skip(current.name, why);
        }
    }
}

static void walk_graph(CUgraphExec exec, CUgraph graph, int params_changed, CUstream stream);

/* cuGraphLaunch's enter (under `lock`): the first launch of an executable graph
 * captures its kernel nodes (see the top of this file). */
static void graph_launching(CUgraphExec exec, CUstream stream) {
    size_t e = 0;
    while (e < exec_count && execs[e].exec != exec) e++;
    if (e == exec_count || execs[e].walked || !execs[e].graph) return;
    execs[e].walked = 1;
    if (have_graph_api()) walk_graph(exec, execs[e].graph, execs[e].params_changed, stream);
    else note_skip("a CUDA graph", "the driver lacks the graph calls");
    release_graph(e);               /* walked once: the clone is no longer needed */
}

/* The walk itself (the top of this file): `graph` is what `exec` was made from. */
static void walk_graph(CUgraphExec exec, CUgraph graph, int params_changed, CUstream stream) {
    size_t n = 0;
    CUgraphNode *nodes = flat_nodes(graph, &n, 0);
    if (!nodes) {
        note_skip("a CUDA graph", "its nodes could not be put in order (or over 4096 of them)");
        return;
    }
    inside = 1;
    int wanted = 0;
    const char *why = params_changed
        ? "its executable graph's node parameters were set after instantiation"
        : plan_walk(nodes, n, stream, &wanted);
    if (!why && opt_limit >= 0 && captured >= opt_limit) why = "--limit";
    if (!why && !wanted)            /* nothing new: not worth running the graph twice */
        why = "a launch of the same kernel, grid and sizes was already seen";
    if (why) {
        leave_out_kernel_nodes(nodes, n, stream, why);
        free(nodes);
        inside = 0;
        return;
    }
    if (!copy_regions(&whole, 0)) {
        free_regions(&whole);
        free(nodes);
        inside = 0;
        return;
    }
    for (size_t i = 0; i < n; i++) {
        CUgraphNodeType type;
        CUresult status = api.GraphNodeGetType(nodes[i], &type);
        if (status == CUDA_SUCCESS && type == CU_GRAPH_NODE_TYPE_KERNEL) {
            Launch *l = &current;
            if (!node_launch(l, nodes[i], stream)) break;
            seen++;
            snprintf(l->graph_text, sizeof l->graph_text, "exec %p, node %zu of %zu", (void *)exec, i, n);
            int take = choose_launch(l);
            l->graph = l->graph_text;
            status = launch_again(l);
            inside = 1;                         /* launch_again ends with it off */
            if (take) finish_launch(l, status);
        } else if (status == CUDA_SUCCESS && type != CU_GRAPH_NODE_TYPE_EMPTY) {
            status = run_copy_node(nodes[i], type, stream);
        }
        if (!cu_ok(status, "running a graph's node on its own")) break;
    }
    if (!restore_regions(&whole, 0))
        fail("the program's memory before its graph ran could not be put back");
    free_regions(&whole);
    free(nodes);
    inside = 0;
}

/* cubinrun capture's CUPTI injection library: pointers a kernel may load from
 * device memory (pointer arrays: grouped GEMMs, MoE routing tables, a
 * __device__ table of pointers). Part of one translation unit
 * (injection_build.py), after injection_globals.c.
 *
 * Once a launch's inputs are saved, each small saved region (at most
 * SCAN_BYTES) is read for 8-byte-aligned words that are device pointers into
 * another live allocation (cuPointerGetAttribute); the memory each reaches is
 * saved as a region of its own (bounded by --max-bytes like the rest) and the
 * record lists the word (`loaded`: region, offset, target region, at). A
 * word must first look like an address near the allocations the launch's own
 * parameters point into (SPAN either side), so a region of plain numbers
 * costs no driver call per word. A word the launch overwrote is no pointer it
 * loaded (a stale value in an output the caching allocator handed back):
 * drop_overwritten_pointers forgets it once the launch ran. */

#define SCAN_BYTES (1 << 20)
#define MAX_LOADED 1024
#define SPAN ((CUdeviceptr)1 << 40)

typedef struct { int region; size_t offset; int target; size_t at; } Loaded;
static Loaded loaded[MAX_LOADED];
static size_t loaded_count;

/* The region of [pointer, end) among l's: one saved already that holds it, or one
 * added by this scan (its start lowered to the pointer), or a new one (-1: no room). */
static int loaded_region(Launch *l, CUdeviceptr pointer, CUdeviceptr end, int from, size_t at,
                         size_t first_new) {
    for (size_t r = 0; r < l->nregions; r++) {
        if (l->region[r].global || l->region[r].end != end) continue;
        if (r >= first_new && pointer < l->region[r].start) l->region[r].start = pointer;
        if (l->region[r].start <= pointer) return (int)r;
    }
    if (l->nregions == MAX_POINTERS) return -1;
    Region *r = &l->region[l->nregions];
    memset(r, 0, sizeof *r);
    r->start = pointer;
    r->end = end;
    r->loaded_from = from;
    r->loaded_at = at;
    return (int)l->nregions++;
}

/* Find the pointers stored in l's saved regions and save what they reach. 0 when
 * the copies failed (the launch is then given up). */
static int follow_loaded_pointers(Launch *l) {
    loaded_count = 0;
    CUdeviceptr low = ~(CUdeviceptr)0, high = 0;
    for (size_t r = 0; r < l->nregions; r++) {
        if (l->region[r].global) continue;
        if (l->region[r].start < low) low = l->region[r].start;
        if (l->region[r].end > high) high = l->region[r].end;
    }
    if (high == 0) return 1;
    low = low > SPAN ? low - SPAN : 0;
    high += SPAN;
    size_t scanned = l->nregions, first_new = l->nregions;
    long long added = 0;
    for (size_t r = 0; r < scanned && loaded_count < MAX_LOADED; r++) {
        size_t size = l->region[r].end - l->region[r].start;
        if (size > SCAN_BYTES || !l->region[r].before) continue;
        size_t skew = (8 - l->region[r].start % 8) % 8;        /* the words the device aligns */
        for (size_t w = skew; w + 8 <= size && loaded_count < MAX_LOADED; w += 8) {
            CUdeviceptr value, start;
            size_t length;
            memcpy(&value, l->region[r].before + w, 8);
            if (value < low || value >= high || value % 4) continue;
            if (value >= l->region[r].start && value < l->region[r].end) continue;   /* its own */
            if (api.PointerGetAttribute(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, value) != CUDA_SUCCESS ||
                api.PointerGetAttribute(&length, CU_POINTER_ATTRIBUTE_RANGE_SIZE, value) != CUDA_SUCCESS)
                continue;
            int target = loaded_region(l, value, start + length, (int)r, w, first_new);
            if (target < 0) break;
            loaded[loaded_count].region = (int)r;
            loaded[loaded_count].offset = w;
            loaded[loaded_count++].target = target;
        }
    }
    for (size_t k = 0; k < loaded_count; k++) {
        CUdeviceptr value;
        memcpy(&value, l->region[loaded[k].region].before + loaded[k].offset, 8);
        loaded[k].at = value - l->region[loaded[k].target].start;
    }
    for (size_t r = first_new; r < l->nregions; r++) added += l->region[r].end - l->region[r].start;
    if ((opt_max_launch >= 0 && 2 * ((long long)region_bytes(l)) > opt_max_launch) ||
        (opt_max_total >= 0 && saved_bytes + 2 * (long long)region_bytes(l) > opt_max_total)) {
        say("%s: %lld bytes reached through loaded pointers not saved (--max-bytes)", l->name, added);
        l->nregions = first_new;           /* listed, not saved: the target is -1 */
        for (size_t k = 0; k < loaded_count; k++)
            if (loaded[k].target >= (int)first_new) loaded[k].target = -1;
        return 1;
    }
    for (size_t r = first_new; r < l->nregions; r++) {
        size_t size = l->region[r].end - l->region[r].start;
        if (!(l->region[r].before = malloc(size ? size : 1))) { fail("out of host memory"); return 0; }
        if (size && !cu_ok(api.MemcpyDtoHAsync(l->region[r].before, l->region[r].start, size, l->stream),
                           "cuMemcpyDtoHAsync"))
            return 0;
    }
    return cu_ok(api.StreamSynchronize(l->stream), "cuStreamSynchronize");
}

static void drop_overwritten_pointers(const Launch *l) {
    size_t kept = 0;
    for (size_t k = 0; k < loaded_count; k++) {
        const Region *r = &l->region[loaded[k].region];
        if (r->after && !memcmp(r->before + loaded[k].offset, r->after + loaded[k].offset, 8))
            loaded[kept++] = loaded[k];
    }
    loaded_count = kept;
}

static void write_loaded(FILE *f) {
    fputs(", \"loaded\": [", f);
    for (size_t k = 0; k < loaded_count; k++)
        fprintf(f, "%s{\"region\": %d, \"offset\": %zu, \"target\": %d, \"at\": %zu}", k ? ", " : "",
                loaded[k].region, loaded[k].offset, loaded[k].target,
                loaded[k].target < 0 ? (size_t)0 : loaded[k].at);
    fputc(']', f);
}

/* cubinrun capture's CUPTI injection library: module globals. Each module's
 * cubin, as it loads, is read for the variables it defines (the STT_OBJECT
 * symbols of its `.nv.constant*` and `.nv.global*` sections, as
 * cubinrun/binary/cubin.py's module_globals reads them); a captured launch
 * saves each global of its module (cuModuleGetGlobal: address and size) as a
 * region named by the global, before and after the launch like the memory its
 * pointers reach. cubinrun writes them as the spec's `globals:`, so the replay
 * sets them before its launch. Part of one translation unit
 * (injection_build.py), after injection.c.
 *
 * A module that loaded where no launch of ours saw it (lazily, inside a call
 * CUPTI does not report to us) has no id for its CUmodule; a module with
 * globals therefore also keeps a hash of each function it defines, so the
 * launch's kernel name finds it. */
#include <elf.h>

#define MAX_GLOBAL_MODULES 4096
#define MAX_GLOBALS_PER_LAUNCH 256

typedef struct {
    unsigned id;
    size_t count, nfunctions;
    char **names;
    uint64_t *functions;        /* sorted hashes of the functions it defines */
} ModuleGlobals;
static ModuleGlobals module_globals[MAX_GLOBAL_MODULES];
static size_t module_globals_count;
/* not `lock`: a module may load inside our own driver calls, with `lock` held */
static pthread_mutex_t globals_lock = PTHREAD_MUTEX_INITIALIZER;

static uint64_t name_hash(const char *name) {
    return fnv(14695981039346656037ULL, name, strlen(name));
}

static int by_value(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static int in_image(size_t size, uint64_t offset, uint64_t length) {
    return offset <= size && length <= size - offset;
}

/* The names of the variables an ELF image defines, or 0 names when it is no ELF. */
static void record_globals(unsigned id, const unsigned char *image, size_t size) {
    if (size < sizeof(Elf64_Ehdr) || memcmp(image, ELFMAG, SELFMAG) || image[EI_CLASS] != ELFCLASS64)
        return;
    const Elf64_Ehdr *header = (const Elf64_Ehdr *)image;
    if (header->e_shentsize != sizeof(Elf64_Shdr) || header->e_shstrndx >= header->e_shnum ||
        !in_image(size, header->e_shoff, (uint64_t)header->e_shnum * sizeof(Elf64_Shdr)))
        return;
    const Elf64_Shdr *sections = (const Elf64_Shdr *)(image + header->e_shoff);
    const Elf64_Shdr *names = &sections[header->e_shstrndx];
    if (!in_image(size, names->sh_offset, names->sh_size)) return;
    char **found = NULL;
    uint64_t *functions = NULL;
    size_t count = 0, nfunctions = 0;
    for (unsigned s = 0; s < header->e_shnum; s++) {
        const Elf64_Shdr *symtab = &sections[s];
        if (symtab->sh_type != SHT_SYMTAB || symtab->sh_link >= header->e_shnum) continue;
        const Elf64_Shdr *strtab = &sections[symtab->sh_link];
        if (!in_image(size, symtab->sh_offset, symtab->sh_size) ||
            !in_image(size, strtab->sh_offset, strtab->sh_size) || strtab->sh_size == 0)
            continue;
        const Elf64_Sym *symbols = (const Elf64_Sym *)(image + symtab->sh_offset);
        for (size_t k = 0; k < symtab->sh_size / sizeof(Elf64_Sym); k++) {
            const Elf64_Sym *symbol = &symbols[k];
            int type = ELF64_ST_TYPE(symbol->st_info);
            if ((type != STT_OBJECT && type != STT_FUNC) || symbol->st_shndx == SHN_UNDEF ||
                symbol->st_shndx >= header->e_shnum || symbol->st_name >= strtab->sh_size)
                continue;
            uint32_t section_name = sections[symbol->st_shndx].sh_name;
            if (section_name >= names->sh_size) continue;
            const char *section = (const char *)image + names->sh_offset + section_name;
            const char *name = (const char *)image + strtab->sh_offset + symbol->st_name;
            size_t room = strtab->sh_size - symbol->st_name;
            if (strnlen(name, room) == room || !*name) continue;
            if (type == STT_FUNC) {
                uint64_t *more = realloc(functions, (nfunctions + 1) * sizeof *functions);
                if (!more) break;
                functions = more;
                functions[nfunctions++] = name_hash(name);
                continue;
            }
            if (strncmp(section, ".nv.constant", 12) && strncmp(section, ".nv.global", 10)) continue;
            char **grown = realloc(found, (count + 1) * sizeof *found);
            if (!grown) break;
            found = grown;
            if (!(found[count] = strdup(name))) break;
            count++;
        }
    }
    if (!count) { free(found); free(functions); return; }
    if (nfunctions) qsort(functions, nfunctions, sizeof *functions, by_value);
    pthread_mutex_lock(&globals_lock);
    if (module_globals_count < MAX_GLOBAL_MODULES) {
        ModuleGlobals *m = &module_globals[module_globals_count++];
        m->id = id;
        m->count = count;
        m->names = found;
        m->nfunctions = nfunctions;
        m->functions = functions;
        found = NULL;
        functions = NULL;
    }
    pthread_mutex_unlock(&globals_lock);
    say("module %u: %zu global(s)", id, count);
    if (found) { for (size_t i = 0; i < count; i++) free(found[i]); free(found); }
    free(functions);
}

/* The module with globals that defines `kernel` (its id unknown to the launch). */
static const ModuleGlobals *module_defining(const char *kernel) {
    uint64_t hash = name_hash(kernel);
    for (size_t i = 0; i < module_globals_count; i++)
        if (module_globals[i].nfunctions &&
            bsearch(&hash, module_globals[i].functions, module_globals[i].nfunctions,
                    sizeof hash, by_value))
            return &module_globals[i];
    return NULL;
}

/* Each global of the launch's module as a region of its own (its address and size
 * from cuModuleGetGlobal), so it is saved and checked as memory its pointers reach. */
static void add_globals(Launch *l) {
    if (!l->module_handle || !api.ModuleGetGlobal) return;
    const ModuleGlobals *globals = NULL;
    pthread_mutex_lock(&globals_lock);
    for (size_t i = 0; l->module >= 0 && i < module_globals_count; i++)
        if (module_globals[i].id == (unsigned)l->module) globals = &module_globals[i];
    if (l->module < 0 && (globals = module_defining(l->name)))
        l->module = (int)globals->id;       /* the record names its cubin too */
    pthread_mutex_unlock(&globals_lock);
    if (!globals) return;
    for (size_t g = 0; g < globals->count; g++) {
        CUdeviceptr address;
        size_t size;
        if (g >= MAX_GLOBALS_PER_LAUNCH || l->nregions == MAX_POINTERS) {
            l->globals_left_out = globals->count - g;
            return;
        }
        if (api.ModuleGetGlobal(&address, &size, l->module_handle, globals->names[g]) != CUDA_SUCCESS ||
            size == 0)
            continue;           /* a symbol the driver does not hand out (a parameter bank) */
        Region *r = &l->region[l->nregions++];
        r->start = address;
        r->end = address + size;
        r->before = r->after = r->again = NULL;
        r->global = globals->names[g];
        r->loaded_from = -1;
    }
}

/* cubinrun capture's CUPTI injection library: the images of CUDA libraries
 * (cuLibraryLoadData, which the CUDA runtime uses for each fatbin it
 * registers, and cuLibraryLoadFromFile). Part of one translation unit
 * (injection_build.py), after injection_globals.c.
 *
 * The module-loaded callback hands over the module the driver made for a
 * context, which for some of libtorch's kernels defined none of them (a
 * compressed fatbin, or a module the callback did not pair with the launch).
 * So each library's image is remembered as it loads (the pointer only: the
 * runtime's fatbins are the program's own read-only data) and, the first time
 * a captured launch's kernel comes from it (cuKernelGetLibrary), saved as
 * `libraries/lN.bin`: a cubin, or a fatbin whose cubins (compressed or not)
 * cubinrun reads when it looks for the kernel's binary. */

#define MAX_LIBRARIES 65536
#define MAX_LIBRARY_BYTES ((size_t)1 << 30)
#define FATBIN_WRAPPER_MAGIC 0x466243b1u
#define FATBIN_MAGIC 0xBA55ED50u

static struct { CUlibrary library; const void *code; char *file; int saved; } libraries[MAX_LIBRARIES];
static size_t library_count;

static void library_loaded(CUlibrary library, const void *code, const char *file) {
    if (library_count == MAX_LIBRARIES || !library) return;
    libraries[library_count].library = library;
    libraries[library_count].code = code;
    libraries[library_count].file = file ? strdup(file) : NULL;
    libraries[library_count++].saved = 0;
}

/* The bytes of an image in memory: a fatbin container (its header says its size),
 * an ELF cubin (its section headers end it), or the runtime's wrapper of a fatbin. */
static size_t image_size(const unsigned char **image) {
    uint32_t magic;
    memcpy(&magic, *image, 4);
    if (magic == FATBIN_WRAPPER_MAGIC) {               /* {magic, version, data, ...} */
        const void *data;
        memcpy(&data, *image + 8, sizeof data);
        *image = data;
        if (!data) return 0;
        memcpy(&magic, *image, 4);
    }
    if (magic == FATBIN_MAGIC) {
        uint16_t header;
        uint64_t body;
        memcpy(&header, *image + 6, 2);
        memcpy(&body, *image + 8, 8);
        return header + body;
    }
    if (!memcmp(*image, ELFMAG, SELFMAG) && (*image)[EI_CLASS] == ELFCLASS64) {
        const Elf64_Ehdr *header = (const Elf64_Ehdr *)*image;
        return header->e_shoff + (size_t)header->e_shnum * header->e_shentsize;
    }
    return 0;
}

static int copy_file_to(const char *from, const char *to) {
    FILE *in = fopen(from, "rb");
    if (!in) return 0;
    fseek(in, 0, SEEK_END);
    long size = ftell(in);
    fseek(in, 0, SEEK_SET);
    unsigned char *data = size > 0 && (size_t)size <= MAX_LIBRARY_BYTES ? malloc(size) : NULL;
    int ok = data && fread(data, 1, size, in) == (size_t)size && write_file(to, data, size);
    free(data);
    fclose(in);
    return ok;
}

/* The saved image of the launch's library (`libraries/lN.bin`), or -1. */
static int library_of(Launch *l) {
    CUlibrary library;
    if (!api.KernelGetLibrary || api.KernelGetLibrary(&library, (CUkernel)l->f) != CUDA_SUCCESS)
        return -1;
    for (size_t i = 0; i < library_count; i++) {
        if (libraries[i].library != library) continue;
        if (libraries[i].saved) return libraries[i].saved > 0 ? (int)i : -1;
        char path[4200];
        snprintf(path, sizeof path, "%s/libraries/l%zu.bin", folder, i);
        const unsigned char *image = libraries[i].code;
        size_t size = image ? image_size(&image) : 0;
        int ok = libraries[i].file ? copy_file_to(libraries[i].file, path)
                                   : size && size <= MAX_LIBRARY_BYTES && write_file(path, image, size);
        libraries[i].saved = ok ? 1 : -1;
        say("library %zu (%s): %s", i, libraries[i].file ? libraries[i].file : "in memory",
            ok ? "saved" : "not saved");
        return ok ? (int)i : -1;
    }
    return -1;
}

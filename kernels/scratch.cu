// scratch.cu: Triton-style trailing scratch parameters. Triton 3.5+ kernels
// end with (void* global_scratch, void* profile_scratch); the launcher
// allocates grid x num_ctas x size bytes for each and appends them after the
// user's parameters. Run by configs/scratch.yaml (launch.global_scratch and
// launch.profile_scratch; the spec's signature lists only x, out, n).
//
// Program p (1-D grid) owns global_scratch + p * SCRATCH_BYTES: it stages its
// TILE inputs there, and after a barrier each slot is read by a different
// thread than the one that wrote it, so the result depends on the scratch
// memory really being there and private to the program:
//   out[i] = 2 * x[i] + 1
// Each program also records (program id, elements handled) as two u32 in
// its PROFILE_BYTES slice of profile_scratch.
// SCRATCH_BYTES and PROFILE_BYTES are compiled in, as in Triton, and must
// equal the sizes in the spec.

constexpr int TILE = 256;                        // floats per program
constexpr int SCRATCH_BYTES = TILE * sizeof(float);
constexpr int PROFILE_BYTES = 8;

extern "C" __global__ void scratch_kernel(const float* x, float* out, int n,
                                          void* global_scratch,
                                          void* profile_scratch)
{
    const unsigned pid = blockIdx.x;
    float* stage = reinterpret_cast<float*>(
        static_cast<char*>(global_scratch) + (size_t)pid * SCRATCH_BYTES);
    const long long base = (long long)pid * TILE;

    for (int t = threadIdx.x; t < TILE; t += blockDim.x)
        if (base + t < n)
            stage[t] = x[base + t];
    __syncthreads();  // also orders the global scratch writes within the block
    for (int t = threadIdx.x; t < TILE; t += blockDim.x) {
        const int r = TILE - 1 - t;  // a slot another thread wrote
        if (base + r < n)
            out[base + r] = 2.0f * stage[r] + 1.0f;
    }

    if (threadIdx.x == 0) {
        unsigned* record = reinterpret_cast<unsigned*>(
            static_cast<char*>(profile_scratch) + (size_t)pid * PROFILE_BYTES);
        record[0] = pid;
        record[1] = (unsigned)max(0LL, min((long long)TILE, n - base));
    }
}

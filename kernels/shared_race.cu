// shared_race.cu: a block reverses its tile of x through shared memory but
// forgets the __syncthreads() between the writes and the reads, so a thread
// may read its neighbour's slot before the neighbour wrote it. For
// `launch --sanitize racecheck`. Run by configs/bugs/shared_race.yaml.

#define TILE 256

extern "C" __global__ void shared_race(const float* x, float* out, int n)
{
    __shared__ float tile[TILE];
    int base = blockIdx.x * TILE;
    int t = threadIdx.x;
    if (base + t < n)
        tile[t] = x[base + t];
    // missing: __syncthreads();
    int j = TILE - 1 - t;
    if (base + t < n && base + j < n)
        out[base + t] = tile[j];
}

// tiled_copy.cu: out = x, copied tile by tile as cuda-samples' transpose
// benchmarks its two copies (a straight copy and one through shared memory).
// Compiled from source per sweep point (configs/sweeps/tiled_copy.yaml), so
// everything a point changes is a -D option:
//   -DVARIANT_naive | -DVARIANT_shared   which copy
//   -DELEM_fp32 | -DELEM_fp64            the element type (the signature follows)
//   -DTILE=N -DROWS=R                    a TILE x TILE tile per block of TILE x ROWS threads
// A shared tile of TILE x (TILE + 1) elements is static shared memory: 128 x
// 129 floats is above the 48 KiB a kernel may declare, so that build fails
// (ptxas "uses too much shared data") and the sweep reports it invalid.

#if defined(ELEM_fp64)
typedef double elem;
#else
typedef float elem;
#endif
#ifndef TILE
#define TILE 32
#endif
#ifndef ROWS
#define ROWS 8
#endif

extern "C" __global__ void tiled_copy(const elem* x, elem* out, int width, int height)
{
    const int col = blockIdx.x * TILE + threadIdx.x;
    const int row = blockIdx.y * TILE + threadIdx.y;
#if defined(VARIANT_shared)
    __shared__ elem tile[TILE][TILE + 1];
    for (int j = 0; j < TILE; j += ROWS)
        if (col < width && row + j < height)
            tile[threadIdx.y + j][threadIdx.x] = x[(long long)(row + j) * width + col];
    __syncthreads();
    for (int j = 0; j < TILE; j += ROWS)
        if (col < width && row + j < height)
            out[(long long)(row + j) * width + col] = tile[threadIdx.y + j][threadIdx.x];
#else
    for (int j = 0; j < TILE; j += ROWS)
        if (col < width && row + j < height)
            out[(long long)(row + j) * width + col] = x[(long long)(row + j) * width + col];
#endif
}

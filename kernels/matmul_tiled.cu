// C = A @ B in fp32, row-major, M x K times K x N: a shared-memory tiled matmul
// whose tile (TILE x TILE), rows per thread (WPT) and inner unrolling (UNROLL)
// are -D options, so a sweep compiles variants that all compute the same C.
// The block is (TILE, TILE / WPT); M, N and K must be multiples of TILE.
#ifndef TILE
#define TILE 16
#endif
#ifndef WPT
#define WPT 1
#endif
#ifndef UNROLL
#define UNROLL 1
#endif
// `#pragma unroll UNROLL` would not expand the macro: _Pragma of a string does.
#define PRAGMA(text) _Pragma(#text)
#define UNROLLED(n) PRAGMA(unroll n)

extern "C" __global__ void matmul_tiled(const float *A, const float *B, float *C,
                                        int M, int N, int K) {
    __shared__ float a_tile[TILE][TILE];
    __shared__ float b_tile[TILE][TILE];
    const int rows = TILE / WPT;                 // threads in y
    const int col = blockIdx.x * TILE + threadIdx.x;
    const int row0 = blockIdx.y * TILE + threadIdx.y;
    float acc[WPT];
    for (int w = 0; w < WPT; ++w) acc[w] = 0.0f;
    for (int k0 = 0; k0 < K; k0 += TILE) {
        for (int w = 0; w < WPT; ++w) {
            int r = threadIdx.y + w * rows;
            a_tile[r][threadIdx.x] = A[(blockIdx.y * TILE + r) * K + k0 + threadIdx.x];
            b_tile[r][threadIdx.x] = B[(k0 + r) * N + col];
        }
        __syncthreads();
        UNROLLED(UNROLL)
        for (int k = 0; k < TILE; ++k) {
            float b = b_tile[k][threadIdx.x];
            for (int w = 0; w < WPT; ++w) acc[w] += a_tile[threadIdx.y + w * rows][k] * b;
        }
        __syncthreads();
    }
    for (int w = 0; w < WPT; ++w) C[(row0 + w * rows) * N + col] = acc[w];
}

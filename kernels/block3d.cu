// block3d.cu: a 3-D block and a 3-D grid. A batched matrix transpose through
// shared memory, the classic kernel where blockDim.y (and here .z) matter.
// Run by configs/block3d.yaml with block [32, 8, 2].
//
// x:   batch x rows x cols ints, row-major;  out: batch x cols x rows.
//   out[b][c][r] = x[b][r][c]
// Block (32, Y, Z): threadIdx.z picks one matrix of the batch, the (32, Y)
// threads move one 32 x 32 tile, each thread 32 / Y rows of it.
// Grid (cdiv(cols, 32), cdiv(rows, 32), cdiv(batch, Z)).
// The tile indexing needs blockDim.x == 32 and blockDim.z <= MAX_Z; any
// other block traps (a launch error) rather than writing garbage.

constexpr int TILE = 32;
constexpr int MAX_Z = 4;

extern "C" __global__ void transpose_batched(const int* x, int* out,
                                             int batch, int rows, int cols)
{
    if (blockDim.x != TILE || blockDim.z > MAX_Z)
        __trap();
    // +1 column: the column-wise reads below hit 32 different banks.
    __shared__ int tile[MAX_Z][TILE][TILE + 1];
    int (*mine)[TILE + 1] = tile[threadIdx.z];

    const int b = blockIdx.z * blockDim.z + threadIdx.z;
    const int r0 = blockIdx.y * TILE;
    const int c0 = blockIdx.x * TILE;
    const bool active = b < batch;

    // Load: tile row dy = input row r0 + dy, tile column tx = input column c0 + tx.
    for (int dy = threadIdx.y; dy < TILE; dy += blockDim.y) {
        const int r = r0 + dy, c = c0 + threadIdx.x;
        if (active && r < rows && c < cols)
            mine[dy][threadIdx.x] = x[((long long)b * rows + r) * cols + c];
    }
    __syncthreads();
    // Store: output row c0 + dy, output column r0 + tx = tile[tx][dy].
    for (int dy = threadIdx.y; dy < TILE; dy += blockDim.y) {
        const int c = c0 + dy, r = r0 + threadIdx.x;
        if (active && c < cols && r < rows)
            out[((long long)b * cols + c) * rows + r] = mine[threadIdx.x][dy];
    }
}

"""Kernels of the CUDA C++ tests: CUDA C++ sources written here, and tile kernels (a real file:
tile kernels are read from their source)."""
import cutile_lab as cl
from cutile_lab.lang import *

SCALE = r'''
extern "C" __global__ void scale(const float* __restrict__ x, float* y, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i];
}
'''

# one warp per row: each lane sums a strided slice of the row, then the warp folds the 32
# partial sums with shuffles; lane 0 writes the row's sum
ROW_SUM = r'''
#define WARPS 8
extern "C" __global__ void row_sum(const float* __restrict__ x, float* __restrict__ out,
                                   int rows, int cols) {
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    int row = blockIdx.x * WARPS + warp;
    if (row >= rows) return;
    const float* r = x + (long long)row * cols;
    float acc = 0.0f;
    for (int c = lane; c < cols; c += 32) acc += r[c];
    for (int off = 16; off > 0; off >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, off);
    if (lane == 0) out[row] = acc;
}
'''
ROW_SUM_WARPS = 8

# a row-wise softmax, one block of 256 threads per row: max and sum reduced by warp shuffles and
# a shared-memory pass over the block's 8 warps
SOFTMAX = r'''
extern "C" __global__ void softmax_rows(const float* __restrict__ x, float* __restrict__ y,
                                        int cols) {
    __shared__ float part[8];
    const float* r = x + (long long)blockIdx.x * cols;
    float* o = y + (long long)blockIdx.x * cols;
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    float m = -3.402823466e38f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, r[c]);
    for (int off = 16; off > 0; off >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, off));
    if (lane == 0) part[warp] = m;
    __syncthreads();
    m = part[0];
    for (int w = 1; w < blockDim.x / 32; ++w) m = fmaxf(m, part[w]);
    __syncthreads();
    float s = 0.0f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) s += __expf(r[c] - m);
    for (int off = 16; off > 0; off >>= 1) s += __shfl_xor_sync(0xffffffffu, s, off);
    if (lane == 0) part[warp] = s;
    __syncthreads();
    s = 0.0f;
    for (int w = 0; w < blockDim.x / 32; ++w) s += part[w];
    float inv = 1.0f / s;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) o[c] = __expf(r[c] - m) * inv;
}
'''


@cl.kernel
def square(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    t = load_tile_like(x, z)
    z.store(t * t)


@cl.kernel
def affine(z: Mut[Tensor[f32, "B"]], s: Tensor[f32, "?"], b: Tensor[f32, "?"]):
    z.store(load_tile_like(s, z) * 0.5 + load_tile_like(b, z))

// fault.cu: a kernel that faults on purpose, for the error path: cubinrun
// must report the illegal address as a CUDA error (exit code 4), not hang,
// not crash, and not run a check. Run by configs/fault.yaml.
//
// Every thread stores to global address 0x10, which is never mapped
// (CUDA_ERROR_ILLEGAL_ADDRESS, reported at the next synchronisation).
// The store is volatile so the compiler keeps it; the value depends on a
// parameter so nothing is folded away.

extern "C" __global__ void fault_kernel(int* out, int value)
{
    volatile int* bad = reinterpret_cast<volatile int*>(0x10);
    *bad = value;
    out[threadIdx.x] = value;  // never reached in practice: the store above faults
}

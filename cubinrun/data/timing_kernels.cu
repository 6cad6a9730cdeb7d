// Helper kernels for cubinrun's timing (cubinrun/timing.py). Built to PTX by
// `nvcc -ptx -arch=compute_75 timing_kernels.cu -o timing_kernels.ptx`, with the
// PTX ISA version lowered to 7.0 so that older drivers can JIT it too.

// Reads `bytes` of device memory (16 B per load) so that L2 ends up holding
// clean lines of this buffer and none of the measured kernel's data. A write
// flush (memset) would leave dirty lines that the measured kernel then pays
// to write back. The store never happens for real data (sink is only written
// if the XOR of everything read equals a magic value) but keeps the loads alive.
extern "C" __global__ void cubinrun_l2_flush(const uint4 *buffer, unsigned long long count,
                                            unsigned int *sink) {
    unsigned int acc = 0;
    unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
         i < count; i += stride) {
        uint4 v = buffer[i];
        acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    if (acc == 0x9e3779b9u) *sink = acc;
}

// Spins one thread for `nanoseconds` of the GPU's global timer. Enqueued before
// a batch of timed launches, it keeps the GPU busy while the host queues the
// batch, so that no event pair measures the host's launch latency. With a
// `clock` pointer it also stores the nanoseconds and SM cycles it spun (one SM,
// one thread: cycles / ns is that SM's clock while the batch was timed; as
// nvbench's timestamps kernel, but over hundreds of microseconds).
extern "C" __global__ void cubinrun_spin(unsigned long long nanoseconds,
                                         unsigned long long *clock) {
    unsigned long long start, now, cycles0, cycles1;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    asm volatile("mov.u64 %0, %%clock64;" : "=l"(cycles0));
    do {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    } while (now - start < nanoseconds);
    asm volatile("mov.u64 %0, %%clock64;" : "=l"(cycles1));
    if (clock) {
        clock[0] = now - start;
        clock[1] = cycles1 - cycles0;
    }
}

// Measures the SM clock between two samples, for throttle detection: the
// cycles one SM counts over at least 2 us of the global timer, both ends taken
// right after the timer ticks. The global timer advances in steps (32 ns to
// 1 us, depending on the GPU and on whether a profiler is attached), so
// unaligned ends could be off by a whole step; aligned, only the loop's few
// cycles remain (under 1% of 2 us). Writes {ns, cycles} to `record`.
extern "C" __global__ void cubinrun_clock(unsigned long long *record) {
    unsigned long long first, start, now, cycles0, cycles1;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(first));
    do {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    } while (start == first);
    asm volatile("mov.u64 %0, %%clock64;" : "=l"(cycles0));
    do {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    } while (now - start < 2000);
    asm volatile("mov.u64 %0, %%clock64;" : "=l"(cycles1));
    record[0] = now - start;
    record[1] = cycles1 - cycles0;
}

// Does nothing. Event pairs around 1..16 back-to-back launches of it measure
// what one event pair adds to the kernel it brackets (timing.py, event_offset_us).
extern "C" __global__ void cubinrun_empty() {}

#!/usr/bin/env bash
# Rebuild the sample cubins: kernels/<name>.cu -> kernels/build/<name>.sm_90.cubin.
# The cubins are committed, so running cubinrun needs no nvcc; run this after
# editing a kernel (made with nvcc 13.0). Extra nvcc flags may come from
# NVCC_FLAGS, e.g. NVCC_FLAGS="-Xptxas -v" to see registers and shared memory.
set -euo pipefail

cd "$(dirname "$0")"   # relative source names keep -lineinfo free of local paths
arch=sm_90
nvcc=${NVCC:-nvcc}

echo "using $("$nvcc" --version | tail -n 1)"
mkdir -p build
for src in *.cu; do
    out="build/${src%.cu}.$arch.cubin"
    echo "build $src -> kernels/$out"
    # shellcheck disable=SC2086  # NVCC_FLAGS is a list of words on purpose
    "$nvcc" -cubin -arch="$arch" -O3 -lineinfo ${NVCC_FLAGS:-} -o "$out" "$src"
done

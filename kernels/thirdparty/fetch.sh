#!/usr/bin/env bash
# Fetch the third-party kernels that configs/realkernels/ run, at pinned
# commits, with their licences, into kernels/thirdparty/<project>/ (git-ignored:
# third-party code is never committed here). Each file's SHA-256 is checked.
#
#   kernel_tuner  Kernel Tuner's CUDA examples (Apache-2.0)
#                 https://github.com/KernelTuner/kernel_tuner
#   cuda-samples  NVIDIA's CUDA samples and their Common/ headers (BSD-3-Clause)
#                 https://github.com/NVIDIA/cuda-samples
#
# Downloads from raw.githubusercontent.com with curl; a machine without GitHub
# can read local clones instead: KERNEL_TUNER_GIT=path/to/kernel_tuner/.git and
# CUDA_SAMPLES_GIT=path/to/cuda-samples/.git (any clone holding the commits).
# Tests that need these files skip when they are absent.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"

KERNEL_TUNER=(KernelTuner/kernel_tuner 96a6abc1019179397753c4afede9149a80aec369 kernel_tuner
    "LICENSE c6596eb7be8581c18be736c846fb9173b69eccf6ef94c5135893ec56bd92ba08"
    "examples/cuda/matmul.cu 7b85c7f040b14c2379c478950aa969815b241f1eebff372e1788bc82768cb1fc"
    "examples/cuda/convolution.cu 14b74948ac333fc1ec00c4476bff1a2ea5063c622afab5f85a45685b13582948"
    "examples/cuda/reduction.cu 07f0752a24ffefc73505e03c5da92760ad0520c1bc15990f4117c8d5c7c41051"
    "examples/cuda/stencil.cu 3a7c8c8dabd6e997489233fa2dbbb062b4d6c1c9ea6995688e6c9ec9a5426b07"
    "examples/cuda/expdist.cu fdfd54da2db9fd174bf7d02ab43359c6a26ebabc05cc52cfe578f759553c9c45")

CUDA_SAMPLES=(NVIDIA/cuda-samples c94ff366aed18c797b8a85dfaac7817b0228b420 cuda-samples
    "LICENSE b3e40c5bfed1fca5c62d2c1f2208bf51f8d2c910219f94c443f657ace9001be3"
    "Common/helper_cuda.h 997f9ac1f8e5f8e5f45f8b11eebab5b89305dee7430b90654bafe62283cffee1"
    "Common/helper_functions.h 3fdcd18e41ffc2a9c88ade3595384e9cd05a2d84f80b86a2d5982035ca79c426"
    "Common/helper_string.h 616ac8b2588a6e73aed207f85faf0da5e617404390df1790f6637b1042dbcc94"
    "Common/helper_timer.h c48552a7c7b7a5840fcfbc176bfb5a19b501fdc56796b64a63e78e39ab547078"
    "Common/helper_image.h bc1fe7921bafad278ffa2e4bc8a99c18825208b9f5f47842a7cf7e86cae8b3f1"
    "Common/exception.h ad043023a652bf3610671aad88237383c7bf2e17c66f8da5830d1d668fe7bbe7"
    "Samples/0_Introduction/matrixMul/matrixMul.cu 71872f21264d67faf4d71301d6bf088579060d0ea9dea2a85caafc1b28870809"
    "Samples/6_Performance/transpose/transpose.cu 14b15f234a54fbe3d31185e397caab40532cd76a347691af4ce840cae8f30682"
    "Samples/2_Concepts_and_Techniques/reduction/reduction_kernel.cu c9ac9a9a424726522dd616fa24d58e6f0919ac95dd746a233d5fb857bffffde9")

fetch_project() {   # repo commit folder "path sha256"...; $1 is the local clone or ""
    local clone=$1 repo=$2 commit=$3 folder=$4
    shift 4
    local entry path sum target
    for entry in "$@"; do
        read -r path sum <<<"$entry"
        target="$here/$folder/$path"
        mkdir -p "$(dirname "$target")"
        if [[ -n "$clone" ]]; then
            git --git-dir="$clone" show "$commit:$path" >"$target.part"
        else
            curl -fsSL --retry 3 "https://raw.githubusercontent.com/$repo/$commit/$path" -o "$target.part"
        fi
        if [[ "$(sha256sum "$target.part" | cut -c1-64)" != "$sum" ]]; then
            rm -f "$target.part"
            echo "fetch.sh: $repo $path does not have the pinned SHA-256 $sum" >&2
            exit 1
        fi
        mv "$target.part" "$target"
    done
    echo "$repo@${commit:0:12} -> kernels/thirdparty/$folder ($# files)"
}

fetch_project "${KERNEL_TUNER_GIT:-}" "${KERNEL_TUNER[@]}"
fetch_project "${CUDA_SAMPLES_GIT:-}" "${CUDA_SAMPLES[@]}"

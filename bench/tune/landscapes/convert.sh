#!/bin/bash
# usage: bench/tune/landscapes/convert.sh CACHES OUTDIR: the chosen Kernel Tuner caches of
# AutoTuningAssociation/benchmark_hub (gunzipped into CACHES, named as below) converted
# into OUTDIR (bench/tune/landscapes), with the restrictions of the scripts that made them
set -e
K=$1; out=$2
P="${PYTHON:-python3} $(dirname "$0")/../kt_landscape.py to-landscape"
HUB="AutoTuningAssociation/benchmark_hub@8eeb99e, MIT licence (c) 2025 AutoTuningAssociation"
CONV=(--constraint "use_padding==0 or block_size_x % 32 != 0" --constraint "block_size_x*block_size_y<=1024" --constraint "use_padding==0 or use_shmem != 0" --constraint "use_shmem == 0 or (((block_size_x*tile_size_x+(filter_width-1)))*((block_size_y*tile_size_y+(filter_height-1)))) < 12*1024")
DEDISP=(--constraint "32 <= block_size_x * block_size_y <= 1024" --constraint "tile_size_x > 1 or tile_stride_x == 0" --constraint "tile_size_y > 1 or tile_stride_y == 0")
CONV2=(--constraint "block_size_x*block_size_y>=64" --constraint "block_size_x*block_size_y<=1024" --constraint "tile_size_x*tile_size_y<30")
GEMM=(--constraint "KWG % KWI == 0" --constraint "MWG % (MDIMC * VWM) == 0" --constraint "NWG % (NDIMC * VWN) == 0" --constraint "MWG % (MDIMA * VWM) == 0" --constraint "NWG % (NDIMB * VWN) == 0" --constraint "KWG % ((MDIMC * NDIMC)/MDIMA) == 0" --constraint "KWG % ((MDIMC * NDIMC)/NDIMB) == 0")
for g in A100 A4000 W6600 MI250X; do $P $K/cachefiles_convolution_milo_$g.json $out/conv_${g,,} "${CONV[@]}" --about "cachefiles/convolution_milo/$g.json.gz of $HUB"; done
for g in A100 A4000 MI250X; do $P $K/cachefiles_dedispersion_milo_$g.json $out/dedisp_${g,,} "${DEDISP[@]}" --about "cachefiles/dedispersion_milo/$g.json.gz of $HUB"; done
$P $K/currently_unused_cachefiles_convolution_RTX_3090.json $out/conv2_3090 "${CONV2[@]}" --about "currently_unused/cachefiles/convolution/RTX_3090.json.gz of $HUB"
$P $K/currently_unused_cachefiles_convolution_RTX_2080_Ti.json $out/conv2_2080ti "${CONV2[@]}" --about "currently_unused/cachefiles/convolution/RTX_2080_Ti.json.gz of $HUB"
$P $K/currently_unused_cachefiles_pnpoly_RTX_3090.json $out/pnpoly_3090 --about "currently_unused/cachefiles/pnpoly/RTX_3090.json.gz of $HUB"
$P $K/currently_unused_cachefiles_pnpoly_RTX_2080_Ti.json $out/pnpoly_2080ti --about "currently_unused/cachefiles/pnpoly/RTX_2080_Ti.json.gz of $HUB"
$P "$K/currently_unused_cachefiles_KernelTuner_data_gemm_RTX_3090.json" $out/gemm_3090 "${GEMM[@]}" --about "currently_unused/cachefiles/KernelTuner data/gemm/RTX_3090.json.gz of $HUB"
$P "$K/currently_unused_cachefiles_KernelTuner_data_gemm_RTX_Titan.json" $out/gemm_titan "${GEMM[@]}" --about "currently_unused/cachefiles/KernelTuner data/gemm/RTX_Titan.json.gz of $HUB"

"""The reference for configs/realkernels/kt_convolution.yaml: Kernel Tuner's
convolution is a 2-D correlation of the padded input with d_filter."""
import numpy as np


def convolution(inputs, vars):
    """output[y, x] = sum over i, j of input[y + i, x + j] * d_filter[i * FW + j],
    one filter tap at a time (FH * FW passes over the image, in float64)."""
    fh, fw, h, w = int(vars["FH"]), int(vars["FW"]), int(vars["H"]), int(vars["W"])
    image = inputs["input"].astype(np.float64)
    taps = inputs["d_filter"].astype(np.float64).reshape(fh, fw)
    out = np.zeros((h, w))
    for i in range(fh):
        for j in range(fw):
            out += taps[i, j] * image[i:i + h, j:j + w]
    return out

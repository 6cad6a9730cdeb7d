"""cubinrun: run one compiled CUDA kernel from a YAML spec."""

__version__ = "0.1.0"

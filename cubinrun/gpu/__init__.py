"""Everything that touches the device: the driver calls (`driver`, the only
module that calls cuda-python), device properties (`props`), the loaded
kernel (`kernel`), device memory, its guard bands and whether it fits
(`buffers`, `guards`, `capacity`), transfers (`transfer`), the launcher's
argument values (`arguments`, `tma`), the outputs brought back (`outputs`)
and the timing of launches (`timing`, `stats`).
"""

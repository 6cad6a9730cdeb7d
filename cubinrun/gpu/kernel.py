"""Load the kernel on the device and make it launchable as the spec asks.

The driver is the authority on what a loaded function needs: its registers,
static shared memory and maximum block size. Dynamic shared memory above the
default 48 KiB needs an explicit opt-in, granted up to the device's limit
minus the static part; over it is the user's error, named by its field. These
limits are LaunchLimitErrors: in a sweep such a point is `invalid`.
"""
from __future__ import annotations

from dataclasses import dataclass

from . import driver
from ..errors import LaunchLimitError
from ..plan.make import Plan

DEFAULT_SHARED_LIMIT = 48 * 1024
PORTABLE_CLUSTER_SIZE = 8

FUNCTION_ATTRIBUTES = {                       # our key: the driver's attribute
    "registers": "NUM_REGS",
    "shared_static": "SHARED_SIZE_BYTES",
    "local": "LOCAL_SIZE_BYTES",
    "max_threads": "MAX_THREADS_PER_BLOCK",
    "const_bytes": "CONST_SIZE_BYTES",
    "binary_version": "BINARY_VERSION",
}


@dataclass(frozen=True)
class LoadedKernel:
    name: str
    module: object
    function: object
    attributes: dict[str, int]

    @property
    def handle(self) -> int:
        return driver.handle_int(self.function)


def load_kernel(cubin: bytes, name: str, device: driver.Device, plan: Plan,
                module=None) -> LoadedKernel:
    """`module`: the cubin already loaded (a session reuses it across runs)."""
    if module is None:
        module = driver.load_module(cubin, what=f"cubin for {device.arch}")
    function = driver.get_function(module, name)
    attributes = {key: driver.function_attribute(function, attr)
                  for key, attr in FUNCTION_ATTRIBUTES.items()}
    kernel = LoadedKernel(name, module, function, attributes)
    _check_block(kernel, plan)
    _allow_shared(kernel, device, plan)
    _allow_cluster(kernel, plan)
    _check_cooperative(kernel, device, plan)
    return kernel


def _check_block(kernel: LoadedKernel, plan: Plan) -> None:
    threads = plan.spec.block[0] * plan.spec.block[1] * plan.spec.block[2]
    limit = kernel.attributes["max_threads"]
    if threads > limit:
        raise LaunchLimitError(f"{threads} threads per block exceed {kernel.name}'s maximum of "
                               f"{limit} (set by __launch_bounds__ or its register use)",
                               field="block")


def _allow_shared(kernel: LoadedKernel, device: driver.Device, plan: Plan) -> None:
    shared = plan.spec.launch.shared
    static = kernel.attributes["shared_static"]
    optin = driver.device_attribute(device.handle, "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN")
    if shared + static > optin:
        raise LaunchLimitError(f"{shared} bytes of dynamic shared memory exceed the limit of "
                               f"{optin - static} on {device.name} ({optin} per block minus "
                               f"{static} static in {kernel.name})", field="launch.shared")
    if shared + static > DEFAULT_SHARED_LIMIT:
        driver.set_function_attribute(kernel.function, "MAX_DYNAMIC_SHARED_SIZE_BYTES", shared,
                                      context=f"{kernel.name}, {shared} bytes")


def _allow_cluster(kernel: LoadedKernel, plan: Plan) -> None:
    cluster = plan.cluster
    if cluster and cluster[0] * cluster[1] * cluster[2] > PORTABLE_CLUSTER_SIZE:
        driver.set_function_attribute(kernel.function, "NON_PORTABLE_CLUSTER_SIZE_ALLOWED", 1,
                                      context=kernel.name)


def _check_cooperative(kernel: LoadedKernel, device: driver.Device, plan: Plan) -> None:
    """A cooperative grid must fit on the device at once; say so before the driver does."""
    if not plan.spec.launch.cooperative:
        return
    block = plan.spec.block
    per_sm = driver.call("cuOccupancyMaxActiveBlocksPerMultiprocessor", kernel.function,
                         block[0] * block[1] * block[2], plan.spec.launch.shared)
    sms = driver.device_attribute(device.handle, "MULTIPROCESSOR_COUNT")
    if plan.ctas > per_sm * sms:
        raise LaunchLimitError(f"a cooperative launch of {plan.ctas} CTAs exceeds the "
                               f"{per_sm * sms} that fit on {device.name} at once ({per_sm} per "
                               f"SM x {sms} SMs)", field="grid")

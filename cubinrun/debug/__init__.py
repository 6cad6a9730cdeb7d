"""Finding what is wrong with a kernel: repeated launches compared bit for
bit, compute-sanitizer and Nsight Compute runs, and standalone reproducers
(the guard bands around buffers are the device memory's: gpu/guards.py).

Nothing is imported here, so that the pipeline can import one module of this
package (repeat) without pulling in the others.
"""

# compute-sanitizer's tools, as `launch --sanitize [TOOL]` names them
SANITIZER_TOOLS = ("memcheck", "racecheck", "initcheck", "synccheck")

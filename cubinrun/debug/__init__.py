"""Finding what is wrong with a kernel: guard bands around buffers, repeated
launches compared bit for bit, compute-sanitizer and Nsight Compute runs, and
standalone reproducers.

Nothing is imported here, so that the launch path can import one module of
this package (guards) without pulling in the others.
"""

# compute-sanitizer's tools, as `launch --sanitize [TOOL]` names them
SANITIZER_TOOLS = ("memcheck", "racecheck", "initcheck", "synccheck")

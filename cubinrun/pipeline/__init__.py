"""The one path a spec takes to a result: prepared without a GPU (`prepare`:
binary, plan, launcher), then on a device session (`session`: kernel loaded,
buffers filled, launched, checked, timed) into a `result.RunResult`. A single
run, a sweep, a worker process and a Ray actor all run specs through here.
"""

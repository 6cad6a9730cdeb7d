#!/usr/bin/env bash
# The wheel as users install it, on the GPU machine: .whl/dist/cubinrun-*.whl
# (built by `python -m build`) installed, not editable, into a fresh venv that
# sees the machine's own packages (the machine has no package index; wheels
# it lacks come from .whl/), then run from a folder outside the checkout on a
# copy of the vector add's spec and cubin, with timing.
#   bash bench/packaging/wheel_acceptance.sh
set -eu
root=$PWD
wheel=$(ls "$root"/.whl/dist/cubinrun-*.whl)
work=$(mktemp -d)
python3 -m venv "$work/venv"
# The machine's packages (numpy, cuda-python, ...) through a .pth: its python3
# may itself be a venv, whose packages --system-site-packages would not see.
python3 -c 'import site; print("\n".join(site.getsitepackages()))' \
    > "$(ls -d "$work"/venv/lib/python3*/site-packages)/machine.pth"
"$work/venv/bin/python" -m pip install -q --no-index --no-deps "$wheel" "$root"/.whl/pyelftools-*.whl "$root"/.whl/cpp_demangle-*.whl
mkdir -p "$work/x/configs" "$work/x/kernels/build"
cp "$root/configs/vector_add.yaml" "$work/x/configs/"
cp "$root/kernels/build/vector_add.sm_90.cubin" "$work/x/kernels/build/"
cd "$work/x"
unset PYTHONPATH
"$work/venv/bin/python" - "$work/venv" <<'PY'
import sys, cubinrun
print("cubinrun imported from", cubinrun.__file__)
assert cubinrun.__file__.startswith(sys.argv[1]), "not the installed package"
PY
"$work/venv/bin/cubinrun" launch configs/vector_add.yaml
"$work/venv/bin/cubinrun" --json launch configs/vector_add.yaml > result.json
"$work/venv/bin/python" - <<'PY'
import json
report = json.load(open("result.json"))
assert report["check"]["passed"] is True, report["check"]
median = report["timing"]["median_us"]
print(f"installed wheel: check passed, timed median {median:.2f} us")
PY

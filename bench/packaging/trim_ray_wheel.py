"""A Ray wheel without what `cubinrun launch --ray` never uses, small enough to
carry to a machine with no package index (the GPU machine takes at most
64 MiB a call; Ray's manylinux wheel is ~79 MB, ~33 MB of it Java jars).

Drops ray/jars (Java workers), the libraries built on Ray (rllib, tune,
train, serve, data, llm, air) and the dashboard's web client; keeps Ray core
(the raylet, GCS, the Python API, the dashboard and runtime-env agents that
the raylet starts). Rewrites the RECORD so pip installs it as usual.
`tests/runs/test_ray_backend.py` passes against a trimmed install (see bench/README.md).

    python3 bench/packaging/trim_ray_wheel.py ray-2.60.0-cp312-cp312-manylinux2014_x86_64.whl OUTDIR
"""
from __future__ import annotations

import argparse
import base64
import hashlib
import zipfile
from pathlib import Path

DROPPED = ("ray/jars/", "ray/rllib/", "ray/tune/", "ray/train/", "ray/serve/", "ray/data/",
           "ray/llm/", "ray/air/", "ray/dashboard/client/")


def trim(source: Path, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / source.name
    kept, record_name, records = 0, None, []
    with zipfile.ZipFile(source) as wheel, \
            zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as out:
        for item in wheel.infolist():
            name = item.filename
            if name.endswith(".dist-info/RECORD"):
                record_name = name
                continue
            if name.startswith(DROPPED):
                continue
            data = wheel.read(item)
            out.writestr(item, data, compress_type=zipfile.ZIP_DEFLATED, compresslevel=9)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
            records.append(f"{name},sha256={digest.decode()},{len(data)}")
            kept += 1
        if record_name is None:
            raise SystemExit(f"{source}: no RECORD, not a wheel")
        records.append(f"{record_name},,")
        out.writestr(record_name, "\n".join(records) + "\n")
    print(f"{target}: {kept} files, {target.stat().st_size / 2**20:.1f} MiB "
          f"(from {source.stat().st_size / 2**20:.1f} MiB)")
    return target


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("wheel", type=Path)
    parser.add_argument("out", type=Path, help="folder for the trimmed wheel (same name)")
    args = parser.parse_args()
    trim(args.wheel, args.out)


if __name__ == "__main__":
    main()

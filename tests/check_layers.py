#!/usr/bin/env python3
"""Checks that the source layers depend one way (README "Code layout"):

    core <- io <- render <- dist <- {cpu, cuda} <- train <- view <- app

A file in a layer may include its own layer and the layers below it, never one above it or a
sibling (cpu and cuda do not include each other). Prints every offending include and exits 1.
    tests/check_layers.py [SRC_DIR]
"""
import pathlib
import re
import sys

BELOW = {
    "core": set(),
    "io": {"core"},
    "render": {"core", "io"},
    "dist": {"core", "io", "render"},
    "cpu": {"core", "io", "render", "dist"},
    "cuda": {"core", "io", "render", "dist"},
    "train": {"core", "io", "render", "dist", "cpu", "cuda"},
    "view": {"core", "io", "render", "dist", "cpu", "cuda", "train"},
    "app": {"core", "io", "render", "dist", "cpu", "cuda", "train", "view"},
}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([a-z_]+)/[^"]+"', re.M)


def main() -> int:
    src = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).parent.parent / "src")
    bad = []
    layers = sorted(p.name for p in src.iterdir() if p.is_dir())
    unknown = [name for name in layers if name not in BELOW]
    if unknown:
        print(f"{src}: directories {unknown} are not in the layer order of {__file__}")
        return 1
    for path in sorted(src.rglob("*")):
        if path.suffix not in {".h", ".cuh", ".cpp", ".cu"}:
            continue
        layer = path.relative_to(src).parts[0]
        for m in INCLUDE.finditer(path.read_text()):
            target = m.group(1)
            if target in BELOW and target != layer and target not in BELOW[layer]:
                line = path.read_text().count("\n", 0, m.start(1)) + 1
                bad.append(f"{path.relative_to(src.parent)}:{line}: {layer}/ includes {target}/")
    for b in bad:
        print(b)
    if not bad:
        print(f"layers are one-way: {len(layers)} layers under {src}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

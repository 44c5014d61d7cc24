"""Stand-in for the plyfile package (tools/peer/fastgs.sh: the GPU machine's Python lacks it and
has no network): the part FastGS uses. One or more elements of scalar properties; reads binary
little-endian PLY files, writes them."""

import numpy as np

_TYPES = {"char": "i1", "uchar": "u1", "short": "<i2", "ushort": "<u2", "int": "<i4",
          "uint": "<u4", "float": "<f4", "double": "<f8", "int8": "i1", "uint8": "u1",
          "int16": "<i2", "uint16": "<u2", "int32": "<i4", "uint32": "<u4", "float32": "<f4",
          "float64": "<f8"}
_NAMES = {"i1": "char", "u1": "uchar", "i2": "short", "u2": "ushort", "i4": "int", "u4": "uint",
          "f4": "float", "f8": "double"}


class PlyProperty:
    def __init__(self, name, dtype):
        self.name, self.dtype = name, dtype


class PlyElement:
    def __init__(self, name, data):
        self.name, self.data = name, data
        self.properties = [PlyProperty(n, data.dtype[n]) for n in data.dtype.names]

    @staticmethod
    def describe(data, name):
        return PlyElement(name, data)

    def __getitem__(self, key):
        return self.data[key]

    @property
    def count(self):
        return len(self.data)


class PlyData:
    def __init__(self, elements):
        self.elements = list(elements)

    def __getitem__(self, name):
        for e in self.elements:
            if e.name == name:
                return e
        raise KeyError(name)

    @staticmethod
    def read(path):
        with open(path, "rb") as f:
            if f.readline().strip() != b"ply":
                raise ValueError(f"{path}: not a PLY file")
            layout, fmt = [], None
            while True:
                words = f.readline().decode("ascii").split()
                if not words or words[0] in ("comment", "obj_info"):
                    continue
                if words[0] == "end_header":
                    break
                if words[0] == "format":
                    fmt = words[1]
                elif words[0] == "element":
                    layout.append((words[1], int(words[2]), []))
                elif words[0] == "property":
                    if words[1] == "list":
                        raise ValueError(f"{path}: list properties are not supported")
                    layout[-1][2].append((words[2], _TYPES[words[1]]))
            if fmt != "binary_little_endian":
                raise ValueError(f"{path}: format {fmt}, only binary_little_endian is supported")
            elements = []
            for name, count, props in layout:
                dt = np.dtype(props)
                data = np.frombuffer(f.read(dt.itemsize * count), dtype=dt, count=count)
                elements.append(PlyElement(name, data))
        return PlyData(elements)

    def write(self, path):
        with open(path, "wb") as f:
            head = ["ply", "format binary_little_endian 1.0"]
            for e in self.elements:
                head.append(f"element {e.name} {len(e.data)}")
                for n in e.data.dtype.names:
                    head.append(f"property {_NAMES[e.data.dtype[n].str[1:]]} {n}")
            head.append("end_header")
            f.write(("\n".join(head) + "\n").encode("ascii"))
            for e in self.elements:
                dt = np.dtype([(n, e.data.dtype[n].newbyteorder("<")) for n in e.data.dtype.names])
                f.write(np.ascontiguousarray(e.data.astype(dt)).tobytes())

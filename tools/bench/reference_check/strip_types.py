"""Turns the two splat-transform TypeScript sources run.sh fetched into plain JavaScript for node:
the decoding loop of decompressPly (decode_body.js) and the CompressedChunk class
(compressed-chunk.js). Only type annotations are removed; the code runs as written."""
import re
import sys

work = sys.argv[1]
s = open(f"{work}/decompress-ply.ts").read()
body = s[s.index("    const lerp = "):s.index("    return result;\n};\n\nexport")]
body = re.sub(r"\((\w+): number, (\w+): number, (\w+): number\)", r"(\1, \2, \3)", body)
body = re.sub(r"\((\w+): number, (\w+): number\)", r"(\1, \2)", body)
body = re.sub(r"\((\w+): number\)", r"(\1)", body)
body = re.sub(r"!\.data as \w+", ".data", body)
body = re.sub(r" as \w+", "", body)
open(f"{work}/decode_body.js", "w").write(body)

c = open(f"{work}/compressed-chunk.ts").read()
c = c.replace("import { Quat } from 'playcanvas';\n", "")
c = c.replace("import { sigmoid } from '../utils';\n", "const sigmoid = (v) => 1 / (1 + Math.exp(-v));\n")
c = re.sub(r"^    (size|data|chunkData|position|rotation|scale|color): [^;]*;\n", "", c, flags=re.M)
c = c.replace("data: any = {};", "")
c = c.replace("this.size = size;", "this.size = size; this.data = {};")
c = re.sub(r"\((\w+): Float32Array\)", r"(\1)", c)
for n in (4, 3, 2):
    c = re.sub(r"\(" + ", ".join([r"(\w+): number"] * n) + r"\)", "(" + ", ".join(f"\\{i + 1}" for i in range(n)) + ")", c)
c = re.sub(r"\((\w+): number, (\w+): any\)", r"(\1, \2)", c)
c = c.replace("static members = [", "static members() { return [")
c = c.replace("'rot_0', 'rot_1', 'rot_2', 'rot_3'\n    ];", "'rot_0', 'rot_1', 'rot_2', 'rot_3'\n    ]; }")
c = c.replace("CompressedChunk.members.forEach", "CompressedChunk.members().forEach")
c = c.replace("export { CompressedChunk };", "module.exports = { CompressedChunk };")
open(f"{work}/compressed-chunk.js", "w").write(c)

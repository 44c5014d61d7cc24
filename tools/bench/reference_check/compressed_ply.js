// splat's compressed .ply against playcanvas/splat-transform's own packing (CompressedChunk.pack)
// and decoding (decompressPly's loop), run from that repository's sources with their TypeScript
// types stripped by run.sh. Usage: node compressed_ply.js FILE.compressed.ply DECODED.ply MODEL.ply
// (DECODED: splat's own decoding of FILE, as a float .ply; MODEL: the float model it came from).
const fs = require('fs');
global.Quat = class { set(x, y, z, w) { this.x = x; this.y = y; this.z = z; this.w = w; return this; }
  normalize() { const l = Math.hypot(this.x, this.y, this.z, this.w);
    if (l === 0) { this.x = this.y = this.z = 0; this.w = 1; } else { const i = 1 / l; this.x *= i; this.y *= i; this.z *= i; this.w *= i; } return this; } };
const { CompressedChunk } = require(process.env.WORK + '/compressed-chunk.js');
function parsePly(buf) {
  const end = buf.indexOf('end_header\n') + 'end_header\n'.length;
  const lines = buf.slice(0, end).toString().split('\n');
  const els = []; for (const l of lines) { const t = l.split(' ');
    if (t[0] === 'element') els.push({ name: t[1], count: +t[2], props: [] });
    if (t[0] === 'property') els[els.length - 1].props.push({ type: t[1], name: t[2] }); }
  const size = { float: 4, uint: 4, uchar: 1 }; let off = end; const dv = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  for (const e of els) { e.cols = {}; for (const p of e.props) e.cols[p.name] = [];
    for (let i = 0; i < e.count; i++) for (const p of e.props) { const v = p.type === 'float' ? dv.getFloat32(off, true) : p.type === 'uint' ? dv.getUint32(off, true) : dv.getUint8(off); e.cols[p.name].push(v); off += size[p.type]; } }
  return els;
}
const [cply, floatDecoded, original] = process.argv.slice(2).map(f => parsePly(fs.readFileSync(f)));
const chunk = cply.find(e => e.name === 'chunk').cols, vert = cply.find(e => e.name === 'vertex').cols;
const numSplats = vert.packed_position.length, CHUNK_SIZE = 256;
// --- decode with the reference loop ---
const getChunk = n => Float32Array.from(chunk[n]);
const packed_position = vert.packed_position, packed_rotation = vert.packed_rotation, packed_scale = vert.packed_scale, packed_color = vert.packed_color;
const [min_x, min_y, min_z, max_x, max_y, max_z] = ['min_x','min_y','min_z','max_x','max_y','max_z'].map(getChunk);
const [min_scale_x, min_scale_y, min_scale_z, max_scale_x, max_scale_y, max_scale_z] = ['min_scale_x','min_scale_y','min_scale_z','max_scale_x','max_scale_y','max_scale_z'].map(getChunk);
const hasChunkColors = true;
const [min_r, min_g, min_b, max_r, max_g, max_b] = ['min_r','min_g','min_b','max_r','max_g','max_b'].map(getChunk);
const cols = {}; for (const n of ['x','y','z','f_dc_0','f_dc_1','f_dc_2','opacity','rot_0','rot_1','rot_2','rot_3','scale_0','scale_1','scale_2']) cols[n] = new Float32Array(numSplats);
const result = { getColumnByName: n => ({ data: cols[n] }) };
eval(fs.readFileSync(process.env.WORK + '/decode_body.js', 'utf8').replace(/const shElem[\s\S]*$/, ''));
const dec = floatDecoded[0].cols; let worst = {};
for (const n of Object.keys(cols)) { let m = 0; for (let i = 0; i < numSplats; i++) { const a = cols[n][i], b = dec[n][i];
  if (n === 'opacity' && (!isFinite(a))) continue; m = Math.max(m, Math.abs(a - b)); } worst[n] = m; }
console.log('decode: max |reference - splat| per field', JSON.stringify(worst));
// --- pack with the reference CompressedChunk, in splat's file order (matched by position) ---
const o = original[0].cols, N = o.x.length, order = [];
for (let i = 0; i < numSplats; i++) { let best = 1e9, bj = -1; for (let j = 0; j < N; j++) { const d = (o.x[j]-dec.x[i])**2 + (o.y[j]-dec.y[i])**2 + (o.z[j]-dec.z[i])**2; if (d < best) { best = d; bj = j; } } order.push(bj); }
const c = new CompressedChunk(); let mismatch = 0, floatMismatch = 0;
for (let k = 0; k * CHUNK_SIZE < numSplats; k++) {
  const num = Math.min(numSplats, (k + 1) * CHUNK_SIZE) - k * CHUNK_SIZE; let row;
  for (let j = 0; j < CHUNK_SIZE; j++) { if (j < num) { const i = order[k * CHUNK_SIZE + j]; row = {}; for (const n of CompressedChunk.members()) row[n] = o[n][i]; } c.set(j, row); }
  c.pack();
  const names = ['min_x','min_y','min_z','max_x','max_y','max_z','min_scale_x','min_scale_y','min_scale_z','max_scale_x','max_scale_y','max_scale_z','min_r','min_g','min_b','max_r','max_g','max_b'];
  names.forEach((n, q) => { if (c.chunkData[q] !== Math.fround(chunk[n][k])) floatMismatch++; });
  for (let j = 0; j < num; j++) { const s = k * CHUNK_SIZE + j;
    if (c.position[j] !== packed_position[s] || c.rotation[j] !== packed_rotation[s] || c.scale[j] !== packed_scale[s] || c.color[j] !== packed_color[s]) mismatch++; }
}
console.log(`pack: ${numSplats} splats, ${mismatch} with a packed word differing from the reference, ${floatMismatch} chunk bounds differing`);

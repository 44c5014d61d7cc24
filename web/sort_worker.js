// Depth sort off the main thread: a counting sort of the splats' camera-space depths quantized to
// 16 bits over their range, far to near (the order the renderer blends in). Splats behind the
// near plane are left out.
let positions = null, count = 0, keys = null;
const BINS = 65536, NEAR = 0.01;
const counts = new Uint32Array(BINS);

function sort(row, tz) {
  let lo = Infinity, hi = -Infinity;
  const depth = (i) => row[0] * positions[3 * i] + row[1] * positions[3 * i + 1] + row[2] * positions[3 * i + 2] + tz;
  for (let i = 0; i < count; i++) {
    const z = depth(i);
    keys[i] = z;
    if (z >= NEAR) {
      if (z < lo) lo = z;
      if (z > hi) hi = z;
    }
  }
  const scale = hi > lo ? (BINS - 1) / (hi - lo) : 0;
  counts.fill(0);
  let visible = 0;
  for (let i = 0; i < count; i++) {
    if (!(keys[i] >= NEAR)) {
      keys[i] = -1;
      continue;
    }
    const key = BINS - 1 - Math.floor((keys[i] - lo) * scale);  // far first
    keys[i] = key;
    counts[key]++;
    visible++;
  }
  for (let k = 0, sum = 0; k < BINS; k++) {
    const c = counts[k];
    counts[k] = sum;
    sum += c;
  }
  const order = new Uint32Array(Math.max(visible, 1));
  for (let i = 0; i < count; i++)
    if (keys[i] >= 0) order[counts[keys[i]]++] = i;
  return {order, visible};
}

onmessage = (e) => {
  const m = e.data;
  if (m.positions) {
    positions = m.positions;
    count = positions.length / 3;
    keys = new Float64Array(count);
    return;
  }
  const start = performance.now();
  const {order, visible} = sort(m.row, m.tz);
  postMessage({order, visible, id: m.id, version: m.version, ms: performance.now() - start}, [order.buffer]);
};

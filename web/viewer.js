// The page: loads the scene and model from the server, keeps the depth order fresh through the
// sort worker, draws on change, handles input, and polls for new snapshots while training runs.
// URL parameters: camera=SPLIT:I (e.g. test:0) or camera=I starts at a dataset camera;
// size=camera makes the drawing buffer that camera's exact size; frusta=0 hides the frusta;
// hud=0 hides the overlay; bench=1 turns the orbit every frame (frame-rate measurement); sh=D
// limits the view-dependent colour to SH degree D (0-3; the server sends no coefficients above it:
// at degree 3 they are 96 bytes a splat, at 0 none).
// window.splatView exposes the state for tests: frames drawn, sorts done, settled (the last frame shows the
// current camera and model in an order sorted for them), version, shDegree (of the colours drawn),
// pixels(), useCamera(i).
import {Camera, vec} from './camera.js';
import {Renderer, decodeModel} from './renderer.js';

const params = new URLSearchParams(location.search);
const canvas = document.getElementById('view');
const hud = document.getElementById('hud');
const statusText = document.getElementById('status');
const cameraName = document.getElementById('camera-name');
const exactSize = params.get('size') === 'camera';
const bench = params.get('bench') === '1';
const modelPath = params.has('sh') ? `/model?sh=${encodeURIComponent(params.get('sh'))}` : '/model';
if (params.get('hud') === '0') hud.classList.add('hidden');

const renderer = new Renderer(canvas);
const camera = new Camera();
const worker = new Worker('sort_worker.js');
const state = {
  scene: {background: [0, 0, 0], cameras: []},
  model: null,  // {count, version, positions ...}: the snapshot on the GPU
  centre: [0, 0, 0], radius: 1,
  loading: false,
  selected: -1,  // dataset camera index
  showFrusta: params.get('frusta') !== '0',
  sort: {busy: false, changes: -1, version: -1},  // what the order on the GPU was sorted for
  drawn: {changes: -1, orderChanges: -1, version: -1},
  dirty: true,
  frames: 0,
  fps: 0,
  sorts: 0,  // depth sorts finished, and how long the last one took in the worker
  sortMs: 0,
  error: null,
};

async function fetchJson(path) {
  const r = await fetch(path);
  if (!r.ok) throw new Error(`${path}: HTTP ${r.status}`);
  return r.json();
}

// ---- model and scene ----------------------------------------------------------------------------

// Robust bounds of the splat centres: on each axis, the range from the 5th to the 95th percentile
// (of at most 10^5 of them), so that a few far splats (a background, floaters) do not set the first
// view; the centre of that box, and the radius of the sphere around it.
function sceneBounds(positions) {
  const n = positions.length / 3, step = Math.max(1, Math.floor(n / 1e5));
  if (n === 0) return {centre: [0, 0, 0], radius: 1};
  const lo = [], hi = [];
  for (let k = 0; k < 3; k++) {
    const v = new Float32Array(Math.ceil(n / step));
    for (let i = 0, j = 0; i < n; i += step, j++) v[j] = positions[3 * i + k];
    v.sort();
    lo.push(v[Math.floor(0.05 * (v.length - 1))]);
    hi.push(v[Math.ceil(0.95 * (v.length - 1))]);
  }
  const centre = vec.scale(vec.add(lo, hi), 0.5);
  return {centre, radius: vec.norm(vec.sub(hi, lo)) / 2 || 1};
}

async function loadModel() {
  state.loading = true;
  try {
    const r = await fetch(modelPath);
    if (!r.ok) throw new Error(`${modelPath}: HTTP ${r.status} ${await r.text()}`);
    const model = decodeModel(await r.arrayBuffer());
    renderer.setModel(model);
    const first = state.model === null;
    state.model = {count: model.count, version: model.version, shDegree: model.shDegree};
    if (first) Object.assign(state, sceneBounds(model.positions));
    worker.postMessage({positions: model.positions}, [model.positions.buffer]);
    state.sort.version = -1;
    if (first) startCamera();
  } finally {
    state.loading = false;
    state.dirty = true;
  }
}

// World up: the mean of the dataset cameras' up (-y) axes, else the starting camera's.
function worldUp(cameras) {
  let up = [0, 0, 0];
  for (const c of cameras) up = vec.sub(up, [c.R[3], c.R[4], c.R[5]]);
  return vec.norm(up) > 1e-6 ? vec.normalize(up) : [0, -1, 0];
}

function startCamera() {
  const cams = state.scene.cameras;
  camera.up = worldUp(cams);
  const wanted = params.get('camera');
  if (wanted !== null) {
    const [split, i] = wanted.includes(':') ? wanted.split(':') : [null, wanted];
    const list = cams.map((c, k) => k).filter((k) => split === null || cams[k].split === split);
    if (list[+i] === undefined) throw new Error(`camera=${wanted}: no such dataset camera (${cams.length} cameras)`);
    useCamera(list[+i]);
  } else if (cams.length) {
    useCamera(0);
  } else {
    // Outside the bounds, at the distance where the narrower field of view of the window covers
    // them.
    const K = camera.intrinsicsFor(canvas.clientWidth || 1, canvas.clientHeight || 1);
    const halfFov = Math.min(Math.atan(K.width / 2 / K.fx), Math.atan(K.height / 2 / K.fy));
    camera.lookAt(vec.add(state.centre, [0, 0, -state.radius / Math.sin(halfFov)]), state.centre);
  }
}

function useCamera(i) {
  const c = state.scene.cameras[i];
  state.selected = i;
  camera.setFromDataset(c, state.centre);
  cameraName.textContent = `${c.split} camera ${c.name} (${i + 1} of ${state.scene.cameras.length})`;
  buildFrusta();
  state.dirty = true;
}

function buildFrusta() {
  const cams = state.scene.cameras, data = [];
  let spread = 0;
  for (const c of cams) spread += vec.norm(vec.sub(centreOf(c), state.centre));
  const depth = 0.08 * (cams.length ? spread / cams.length : state.radius);
  cams.forEach((c, k) => {
    const colour = k === state.selected ? [1, 1, 1] : c.split === 'test' ? [0.3, 0.8, 1] : [1, 0.6, 0.2];
    const o = centreOf(c);
    const corners = [[0, 0], [c.width, 0], [c.width, c.height], [0, c.height]].map(([u, v]) => {
      const d = [(u - c.cx) / c.fx * depth, (v - c.cy) / c.fy * depth, depth];  // camera frame
      return vec.add(o, [0, 1, 2].map((j) => c.R[j] * d[0] + c.R[3 + j] * d[1] + c.R[6 + j] * d[2]));
    });
    for (let j = 0; j < 4; j++) data.push(...o, ...colour, ...corners[j], ...colour,
                                          ...corners[j], ...colour, ...corners[(j + 1) % 4], ...colour);
  });
  renderer.setLines(new Float32Array(data));
}

function centreOf(c) {  // -R^T t
  return [0, 1, 2].map((j) => -(c.R[j] * c.t[0] + c.R[3 + j] * c.t[1] + c.R[6 + j] * c.t[2]));
}

// ---- sorting and drawing ------------------------------------------------------------------------

worker.onmessage = (e) => {
  const m = e.data;
  state.sort.busy = false;
  state.sorts++;
  state.sortMs = m.ms;
  if (!state.model || m.version !== state.model.version) return;
  renderer.setOrder(m.order, m.visible);
  state.sort.changes = m.id;
  state.sort.version = m.version;
  state.dirty = true;
};

function requestSort() {
  if (state.sort.busy || !state.model) return;
  if (state.sort.changes === camera.changes && state.sort.version === state.model.version) return;
  state.sort.busy = true;
  worker.postMessage({row: camera.axis(2), tz: camera.translation()[2], id: camera.changes,
                      version: state.model.version});
}

function drawingSize() {
  if (exactSize && camera.intrinsics) {
    const {width, height} = camera.intrinsics;
    if (canvas.width !== width || canvas.height !== height) {
      canvas.width = width;
      canvas.height = height;
      canvas.classList.add('exact');
      canvas.style.width = `${width / devicePixelRatio}px`;
      canvas.style.height = `${height / devicePixelRatio}px`;
    }
  } else {
    const w = Math.round(canvas.clientWidth * devicePixelRatio), h = Math.round(canvas.clientHeight * devicePixelRatio);
    if (canvas.width !== w || canvas.height !== h) {
      canvas.width = w;
      canvas.height = h;
    }
  }
  return camera.intrinsicsFor(canvas.width, canvas.height);
}

const held = new Set();
let lastTime = performance.now(), fpsCount = 0, fpsStart = lastTime;

function frame(now) {
  const dt = Math.min(0.1, (now - lastTime) / 1000);
  lastTime = now;
  fly(dt);
  if (bench && state.model) camera.orbit(2, 0);
  requestSort();
  if (state.dirty || bench || state.drawn.changes !== camera.changes) {
    const K = drawingSize();
    renderer.draw(camera, K, state.scene.background, state.showFrusta);
    state.drawn = {changes: camera.changes, orderChanges: state.sort.changes,
                   version: state.model ? state.sort.version : -1};
    state.dirty = false;
    state.frames++;
    fpsCount++;
  }
  if (now - fpsStart >= 1000) {
    state.fps = fpsCount * 1000 / (now - fpsStart);
    fpsCount = 0;
    fpsStart = now;
    showStatus();
  }
  requestAnimationFrame(frame);
}

function showStatus() {
  if (state.error) return;
  const m = state.model;
  const rate = state.fps > 0 ? `${state.fps.toFixed(state.fps < 10 ? 1 : 0)} fps` : 'idle';  // draws only on change
  statusText.textContent = m ? `${m.count.toLocaleString()} splats · SH ${m.shDegree} · snapshot ${m.version} · ${rate}` : 'loading…';
}

// ---- input --------------------------------------------------------------------------------------

function fly(dt) {
  const speed = 0.8 * camera.distance() * dt, turn = 1.2 * dt;
  const axis = (plus, minus) => (held.has(plus) ? 1 : 0) - (held.has(minus) ? 1 : 0);
  const right = axis('KeyD', 'KeyA'), down = axis('KeyQ', 'KeyE'), forward = axis('KeyW', 'KeyS');
  if (right || down || forward) camera.move(right * speed, down * speed, forward * speed);
  const yaw = axis('ArrowRight', 'ArrowLeft'), pitch = axis('ArrowUp', 'ArrowDown');
  if (yaw || pitch) camera.look(yaw * turn, pitch * turn);
}

let drag = null;
canvas.addEventListener('pointerdown', (e) => {
  drag = {x: e.clientX, y: e.clientY, pan: e.button === 2 || e.shiftKey, moved: 0};
  canvas.setPointerCapture(e.pointerId);
});
canvas.addEventListener('pointermove', (e) => {
  if (!drag) return;
  const dx = (e.clientX - drag.x) * devicePixelRatio, dy = (e.clientY - drag.y) * devicePixelRatio;
  drag.x = e.clientX;
  drag.y = e.clientY;
  drag.moved += Math.abs(dx) + Math.abs(dy);
  if (drag.pan) camera.pan(dx, dy, camera.intrinsicsFor(canvas.width, canvas.height).fy);
  else camera.orbit(dx, dy);
});
canvas.addEventListener('pointerup', (e) => {
  if (drag && drag.moved < 3 && !drag.pan) pick(e);
  drag = null;
});
canvas.addEventListener('contextmenu', (e) => e.preventDefault());
canvas.addEventListener('wheel', (e) => {
  e.preventDefault();
  camera.dolly(Math.exp(e.deltaY * 0.001));
}, {passive: false});
addEventListener('keydown', (e) => {
  held.add(e.code);
  const n = state.scene.cameras.length;
  if (e.code === 'KeyN' && n) useCamera((state.selected + 1) % n);
  if (e.code === 'KeyP' && n) useCamera((state.selected - 1 + n) % n);
  if (e.code === 'KeyF') {
    state.showFrusta = !state.showFrusta;
    state.dirty = true;
  }
  if (e.code === 'KeyH') document.getElementById('help').hidden ^= true;
});
addEventListener('keyup', (e) => held.delete(e.code));
addEventListener('resize', () => { state.dirty = true; });  // a drawing buffer of the window's shape
addEventListener('blur', () => held.clear());

// The dataset camera whose centre is drawn nearest the click, within 15 px.
function pick(e) {
  if (!state.showFrusta) return;
  const rect = canvas.getBoundingClientRect();
  const x = (e.clientX - rect.left) * canvas.width / rect.width, y = (e.clientY - rect.top) * canvas.height / rect.height;
  const K = camera.intrinsicsFor(canvas.width, canvas.height);
  let best = -1, bestDistance = 15 * devicePixelRatio;
  state.scene.cameras.forEach((c, k) => {
    const p = camera.project(centreOf(c), K);
    const d = p && Math.hypot(p[0] - x, p[1] - y);
    if (p && d < bestDistance) [best, bestDistance] = [k, d];
  });
  if (best >= 0) useCamera(best);
}

// ---- live training ------------------------------------------------------------------------------

async function poll() {
  try {
    const info = await fetchJson('/info');
    if (state.model && info.version > state.model.version && !state.loading) await loadModel();
    if (info.live) await showProgress(info.progress);
  } catch (err) {
    statusText.textContent = `server unreachable (${err.message}); retrying`;
  }
  setTimeout(poll, 1000);
}

async function showProgress(p) {
  document.getElementById('live').hidden = false;
  const total = p.total || 1;
  document.getElementById('progress-bar').style.width = `${100 * p.step / total}%`;
  document.getElementById('progress-text').textContent =
      `${p.done ? 'finished' : 'training'}: step ${p.step} of ${total} · ${p.splats.toLocaleString()} splats`;
  drawCurve(await fetchJson('/metrics'));
}

// Smoothed loss (left axis, log scale) and test PSNR (right axis) against the step.
function drawCurve(records) {
  const plot = document.getElementById('curve'), g = plot.getContext('2d');
  const W = plot.width, H = plot.height, pad = 22;
  g.clearRect(0, 0, W, H);
  const losses = records.filter((r) => r.loss_smoothed > 0), evals = records.filter((r) => r.eval);
  if (!losses.length) return;
  const maxStep = Math.max(...records.map((r) => r.step), 1);
  const x = (step) => pad + (W - 2 * pad) * step / maxStep;
  const series = (points, value, colour, label, labelX) => {
    const v = points.map(value), lo = Math.min(...v), hi = Math.max(...v);
    const y = (u) => H - pad - (H - 2 * pad) * (hi > lo ? (u - lo) / (hi - lo) : 0.5);
    g.strokeStyle = g.fillStyle = colour;
    g.beginPath();
    points.forEach((r, i) => (i ? g.lineTo(x(r.step), y(v[i])) : g.moveTo(x(r.step), y(v[i]))));
    g.stroke();
    points.forEach((r, i) => g.fillRect(x(r.step) - 1.5, y(v[i]) - 1.5, 3, 3));
    g.fillText(label, labelX, 12);
  };
  g.font = '11px system-ui';
  g.strokeStyle = '#666';
  g.strokeRect(pad, pad, W - 2 * pad, H - 2 * pad);
  series(losses, (r) => Math.log10(r.loss_smoothed), '#6cf', `loss ${losses.at(-1).loss_smoothed.toPrecision(3)}`, pad);
  if (evals.length) series(evals, (r) => r.eval.psnr, '#fc6', `PSNR ${evals.at(-1).eval.psnr.toFixed(2)} dB`, W / 2);
  g.fillStyle = '#aaa';
  g.fillText(`step ${maxStep}`, W - pad - 50, H - 6);
}

// ---- start --------------------------------------------------------------------------------------

window.splatView = {
  get frames() { return state.frames; },
  get fps() { return state.fps; },
  get sorts() { return state.sorts; },
  get sortMs() { return state.sortMs; },
  get version() { return state.model ? state.model.version : 0; },
  get shDegree() { return state.model ? state.model.shDegree : -1; },
  get error() { return state.error; },
  get settled() {
    const d = state.drawn;
    return !!state.model && !state.loading && d.changes === camera.changes && d.orderChanges === camera.changes &&
           d.version === state.model.version;
  },
  camera,
  useCamera,
  pixels() {
    const {width, height, rgb} = renderer.pixels();
    let text = '';
    for (let i = 0; i < rgb.length; i += 0x8000) text += String.fromCharCode(...rgb.subarray(i, i + 0x8000));
    return {width, height, rgb: btoa(text)};
  },
};

(async () => {
  try {
    state.scene = await fetchJson('/scene');
    await loadModel();
    requestAnimationFrame(frame);
    poll();
  } catch (err) {
    state.error = err.message;
    statusText.textContent = `error: ${err.message}`;
    console.error(err);
  }
})();

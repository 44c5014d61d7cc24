// The viewer's camera, in the repository's conventions (src/core/camera.h): a world-to-camera
// rotation R with OpenCV axes (its rows are the camera's x right, y down and z forward in world
// coordinates), the camera centre `eye`, and the point the orbit turns around.

export const vec = {
  add: (a, b) => [a[0] + b[0], a[1] + b[1], a[2] + b[2]],
  sub: (a, b) => [a[0] - b[0], a[1] - b[1], a[2] - b[2]],
  scale: (a, s) => [a[0] * s, a[1] * s, a[2] * s],
  dot: (a, b) => a[0] * b[0] + a[1] * b[1] + a[2] * b[2],
  cross: (a, b) => [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]],
  norm: (a) => Math.hypot(a[0], a[1], a[2]),
  normalize: (a) => vec.scale(a, 1 / (vec.norm(a) || 1)),
};

// Row-major 3x3 rotation by `angle` radians about the unit `axis` (Rodrigues).
function axisAngle(axis, angle) {
  const [x, y, z] = axis, c = Math.cos(angle), s = Math.sin(angle), k = 1 - c;
  return [c + x * x * k, x * y * k - z * s, x * z * k + y * s,
          y * x * k + z * s, c + y * y * k, y * z * k - x * s,
          z * x * k - y * s, z * y * k + x * s, c + z * z * k];
}

function apply(M, v) {
  return [M[0] * v[0] + M[1] * v[1] + M[2] * v[2], M[3] * v[0] + M[4] * v[1] + M[5] * v[2],
          M[6] * v[0] + M[7] * v[1] + M[8] * v[2]];
}

export class Camera {
  constructor() {
    this.R = [1, 0, 0, 0, 1, 0, 0, 0, 1];
    this.eye = [0, 0, -4];
    this.target = [0, 0, 0];
    this.up = [0, -1, 0];  // world up, the axis the orbit turns around
    this.intrinsics = null;  // a dataset camera's {width, height, fx, fy, cx, cy}, or null
    this.changes = 0;  // counts every move, so that the sort knows which pose it sorted for
  }

  axis(i) { return [this.R[3 * i], this.R[3 * i + 1], this.R[3 * i + 2]]; }
  translation() { return vec.scale(apply(this.R, this.eye), -1); }
  distance() { return vec.norm(vec.sub(this.target, this.eye)); }

  // A dataset camera exactly (R, t), orbiting around the point of its optical axis nearest `centre`.
  setFromDataset(cam, centre) {
    this.R = cam.R.slice();
    const Rt = [cam.R[0], cam.R[3], cam.R[6], cam.R[1], cam.R[4], cam.R[7], cam.R[2], cam.R[5], cam.R[8]];
    this.eye = vec.scale(apply(Rt, cam.t), -1);
    const forward = this.axis(2);
    let depth = vec.dot(vec.sub(centre, this.eye), forward);
    if (!(depth > 1e-3)) depth = vec.norm(vec.sub(centre, this.eye)) || 1;
    this.target = vec.add(this.eye, vec.scale(forward, depth));
    this.intrinsics = {width: cam.width, height: cam.height, fx: cam.fx, fy: cam.fy, cx: cam.cx, cy: cam.cy};
    this.changes++;
  }

  // Looks from `eye` at `target` with the world's up vector up.
  lookAt(eye, target) {
    this.eye = eye.slice();
    this.target = target.slice();
    const z = vec.normalize(vec.sub(target, eye));
    const x = vec.normalize(vec.cross(vec.scale(this.up, -1), z));
    const y = vec.cross(z, x);
    this.R = [...x, ...y, ...z];
    this.changes++;
  }

  // A rigid turn of the camera by `angle` about `axis` through `pivot`.
  rotateAbout(pivot, axis, angle) {
    const M = axisAngle(vec.normalize(axis), angle);
    this.eye = vec.add(pivot, apply(M, vec.sub(this.eye, pivot)));
    this.target = vec.add(pivot, apply(M, vec.sub(this.target, pivot)));
    // Each row (a camera axis in world coordinates) turns with the camera: R' = R M^T.
    const rows = [0, 1, 2].map((i) => apply(M, this.axis(i)));
    this.R = [...rows[0], ...rows[1], ...rows[2]];
    this.changes++;
  }

  // Yaw about the world up and pitch about the camera's x axis, through `pivot`; the pitch stops
  // short of looking straight along up, where the yaw axis would be lost.
  turn(pivot, yaw, pitch) {
    if (yaw) this.rotateAbout(pivot, this.up, yaw);
    if (!pitch) return;
    const before = {R: this.R, eye: this.eye, target: this.target};
    this.rotateAbout(pivot, this.axis(0), pitch);
    if (Math.abs(vec.dot(this.axis(2), this.up)) > 0.995) Object.assign(this, before);
  }

  orbit(dx, dy) { this.turn(this.target, -dx * 0.005, dy * 0.005); }
  look(dx, dy) { this.turn(this.eye, -dx, dy); }

  // Moves eye and target together by camera-frame amounts (x right, y down, z forward).
  move(right, down, forward) {
    const d = vec.add(vec.add(vec.scale(this.axis(0), right), vec.scale(this.axis(1), down)),
                      vec.scale(this.axis(2), forward));
    this.eye = vec.add(this.eye, d);
    this.target = vec.add(this.target, d);
    this.changes++;
  }

  // Screen-space pan by pixels at the target's depth.
  pan(dx, dy, focal) {
    const s = this.distance() / focal;
    this.move(-dx * s, -dy * s, 0);
  }

  // Towards the target (factor < 1) or away from it.
  dolly(factor) {
    const d = vec.sub(this.eye, this.target);
    this.eye = vec.add(this.target, vec.scale(d, Math.max(factor, 1e-3)));
    this.changes++;
  }

  // Pinhole intrinsics for a drawing buffer of width x height: a dataset camera's own when the
  // buffer has its size, else its vertical field of view, centred; 50 degrees without one.
  intrinsicsFor(width, height) {
    const k = this.intrinsics;
    if (k && k.width === width && k.height === height) return k;
    const fy = k ? k.fy * height / k.height : 0.5 * height / Math.tan(25 * Math.PI / 180);
    const fx = k ? fy * k.fx / k.fy : fy;
    return {width, height, fx, fy, cx: width / 2, cy: height / 2};
  }

  // Pixel position of world point p, or null behind the camera.
  project(p, K) {
    const c = vec.add(apply(this.R, p), this.translation());
    if (c[2] < 0.01) return null;
    return [K.fx * c[0] / c[2] + K.cx, K.fy * c[1] / c[2] + K.cy];
  }
}

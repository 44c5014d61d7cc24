// WebGL2 splat rasterizer with the repository's conventions (src/cpu/project_cpu.h,
// ../shared/golden/README.md): EWA projection with the Jacobian's x/z and y/z clamped to 1.3x the
// half field of view, a 0.3 px^2 low-pass, a screen extent out to where alpha falls to 1/255
// (at most 3.33 sigma), alpha = min(0.99, o exp(power)) skipped below 1/255, pixel centres at
// +0.5. Each splat is one instanced quad over its screen extent; the fragment shader evaluates
// the Gaussian and the quads blend back to front (premultiplied alpha) over the background, in
// the order the sort worker computed. The colour is view-dependent up to the blob's SH degree:
// max(0, 0.5 + SH(dir)) with dir from the camera centre to the splat's mean (src/cpu/project_cpu.h),
// in the real SH basis of src/cpu/sh.h.

const SPLATS_PER_ROW = 1024;  // the data texture holds 4 RGBA32F texels a splat
const SH_TEXELS_PER_ROW = 4096;  // the SH texture holds one RGB16F texel a coefficient, K a splat
const SPLAT_BYTES = 44, HEADER_BYTES = {1: 16, 2: 20};  // by layout: src/view/model_blob.h

const SPLAT_VS = `#version 300 es
precision highp float;
precision highp int;
uniform highp sampler2D u_splats;
uniform highp sampler2D u_sh;
uniform int u_sh_degree;
uniform mat3 u_R;
uniform vec3 u_t;
uniform vec4 u_K;  // fx, fy, cx, cy
uniform vec2 u_size;
layout(location = 0) in uint a_index;
flat out vec2 v_mean;
flat out vec3 v_conic;
flat out vec4 v_color;

vec3 coeff(int first, int k) {
  int i = first + k;
  return texelFetch(u_sh, ivec2(i % ${SH_TEXELS_PER_ROW}, i / ${SH_TEXELS_PER_ROW}), 0).rgb;
}

// The bands of src/cpu/sh.h up to u_sh_degree at the unit direction d, summed over the splat's
// coefficients, which start at texel index \`first\`.
vec3 sh(int first, vec3 d) {
  float x = d.x, y = d.y, z = d.z, xx = x * x, yy = y * y, zz = z * z;
  vec3 c = 0.28209479177387814 * coeff(first, 0);
  if (u_sh_degree < 1) return c;
  c += 0.48860251190291987 * (-y * coeff(first, 1) + z * coeff(first, 2) - x * coeff(first, 3));
  if (u_sh_degree < 2) return c;
  c += 1.0925484305920792 * (x * y * coeff(first, 4) - y * z * coeff(first, 5) - x * z * coeff(first, 7)) +
       (0.94617469575756008 * zz - 0.31539156525252005) * coeff(first, 6) +
       0.54627421529603959 * (xx - yy) * coeff(first, 8);
  if (u_sh_degree < 3) return c;
  c += -0.59004358992664352 * y * (3.0 * xx - yy) * coeff(first, 9) +
       2.8906114426405538 * x * y * z * coeff(first, 10) +
       y * (0.45704579946446572 - 2.2852289973223288 * zz) * coeff(first, 11) +
       z * (1.8658816629505768 * zz - 1.1195289977703462) * coeff(first, 12) +
       x * (0.45704579946446572 - 2.2852289973223288 * zz) * coeff(first, 13) +
       1.4453057213202769 * z * (xx - yy) * coeff(first, 14) -
       0.59004358992664352 * x * (xx - 3.0 * yy) * coeff(first, 15);
  return c;
}

void main() {
  gl_Position = vec4(0.0, 0.0, 2.0, 1.0);  // culled: outside the clip volume
  ivec2 uv = ivec2(int(a_index % ${SPLATS_PER_ROW}u) * 4, int(a_index / ${SPLATS_PER_ROW}u));
  vec4 t0 = texelFetch(u_splats, uv, 0), t1 = texelFetch(u_splats, uv + ivec2(1, 0), 0);
  vec4 t2 = texelFetch(u_splats, uv + ivec2(2, 0), 0), t3 = texelFetch(u_splats, uv + ivec2(3, 0), 0);
  vec3 p = u_R * t0.xyz + u_t;
  if (p.z < 0.01) return;
  float opacity = t0.w;
  if (opacity < 1.0 / 255.0) return;
  mat3 world = mat3(t1.x, t1.y, t1.z, t1.y, t1.w, t2.x, t1.z, t2.x, t2.y);
  mat3 cov = u_R * world * transpose(u_R);
  float fx = u_K.x, fy = u_K.y, cx = u_K.z, cy = u_K.w;
  vec2 tan_half = 0.5 * u_size / u_K.xy;
  vec2 lim_pos = (u_size - u_K.zw) / u_K.xy + 0.3 * tan_half;
  vec2 lim_neg = u_K.zw / u_K.xy + 0.3 * tan_half;
  vec2 tc = p.z * clamp(p.xy / p.z, -lim_neg, lim_pos);
  vec3 j0 = vec3(fx / p.z, 0.0, -fx * tc.x / (p.z * p.z));
  vec3 j1 = vec3(0.0, fy / p.z, -fy * tc.y / (p.z * p.z));
  float a = dot(j0, cov * j0) + 0.3, b = dot(j0, cov * j1), c = dot(j1, cov * j1) + 0.3;
  float det = a * c - b * b;
  if (!(det > 0.0)) return;
  float extent = min(3.33, sqrt(2.0 * log(opacity * 255.0)));
  vec2 radius = ceil(extent * sqrt(vec2(a, c)));
  vec2 mean = vec2(fx * p.x / p.z + cx, fy * p.y / p.z + cy);
  if (any(lessThanEqual(mean + radius, vec2(0.0))) || any(greaterThanEqual(mean - radius, u_size))) return;
  vec2 corner = vec2(float(gl_VertexID & 1), float(gl_VertexID >> 1)) * 2.0 - 1.0;
  vec2 pixel = mean + corner * radius;
  gl_Position = vec4(pixel.x / u_size.x * 2.0 - 1.0, 1.0 - pixel.y / u_size.y * 2.0, 0.0, 1.0);
  v_mean = mean;
  v_conic = vec3(c, -b, a) / det;
  vec3 rgb = vec3(t2.zw, t3.x);  // degree 0, precomputed
  if (u_sh_degree > 0) {
    vec3 eye = -(u_t * u_R);  // the camera centre, -R^T t
    int K = (u_sh_degree + 1) * (u_sh_degree + 1);
    rgb = max(vec3(0.0), 0.5 + sh(int(a_index) * K, normalize(t0.xyz - eye)));
  }
  v_color = vec4(rgb, opacity);
}`;

const SPLAT_FS = `#version 300 es
precision highp float;
uniform vec2 u_size;
flat in vec2 v_mean;
flat in vec3 v_conic;
flat in vec4 v_color;
out vec4 o_color;
void main() {
  vec2 d = vec2(gl_FragCoord.x, u_size.y - gl_FragCoord.y) - v_mean;  // y down, centres at +0.5
  float power = -0.5 * (v_conic.x * d.x * d.x + v_conic.z * d.y * d.y) - v_conic.y * d.x * d.y;
  if (power > 0.0) discard;
  float alpha = min(0.99, v_color.a * exp(power));
  if (alpha < 1.0 / 255.0) discard;
  o_color = vec4(v_color.rgb * alpha, alpha);
}`;

// The splats blend into a half-float image, which this pass copies to the canvas: an 8-bit
// drawing buffer would clamp colours above 1 and round to 1/255 at every blend, where the CPU
// backend sums in float and clamps once at the end.
const COPY_VS = `#version 300 es
void main() {  // one triangle over the viewport
  vec2 p = vec2(float((gl_VertexID & 1) << 2), float((gl_VertexID & 2) << 1)) - 1.0;
  gl_Position = vec4(p, 0.0, 1.0);
}`;

const COPY_FS = `#version 300 es
precision highp float;
uniform highp sampler2D u_image;
out vec4 o_color;
void main() {
  o_color = vec4(clamp(texelFetch(u_image, ivec2(gl_FragCoord.xy), 0).rgb, 0.0, 1.0), 1.0);
}`;

// Lines in world space (camera frusta), projected with the same pinhole; clip z = z - 0.02 puts
// the GL near plane at z = 0.01, the splats' near plane.
const LINE_VS = `#version 300 es
precision highp float;
uniform mat3 u_R;
uniform vec3 u_t;
uniform vec4 u_K;
uniform vec2 u_size;
layout(location = 0) in vec3 a_position;
layout(location = 1) in vec3 a_color;
out vec3 v_color;
void main() {
  vec3 p = u_R * a_position + u_t;
  vec2 pixel = u_K.xy * p.xy + u_K.zw * p.z;  // pixel coordinates times z
  gl_Position = vec4(2.0 * pixel.x / u_size.x - p.z, p.z - 2.0 * pixel.y / u_size.y, p.z - 0.02, p.z);
  v_color = a_color;
}`;

const LINE_FS = `#version 300 es
precision highp float;
in vec3 v_color;
out vec4 o_color;
void main() { o_color = vec4(v_color, 1.0); }`;

function compile(gl, vsText, fsText) {
  const program = gl.createProgram();
  for (const [type, text] of [[gl.VERTEX_SHADER, vsText], [gl.FRAGMENT_SHADER, fsText]]) {
    const shader = gl.createShader(type);
    gl.shaderSource(shader, text);
    gl.compileShader(shader);
    if (!gl.getShaderParameter(shader, gl.COMPILE_STATUS)) throw new Error(gl.getShaderInfoLog(shader));
    gl.attachShader(program, shader);
  }
  gl.linkProgram(program);
  if (!gl.getProgramParameter(program, gl.LINK_STATUS)) throw new Error(gl.getProgramInfoLog(program));
  const uniforms = {};
  for (let i = 0; i < gl.getProgramParameter(program, gl.ACTIVE_UNIFORMS); i++) {
    const name = gl.getActiveUniform(program, i).name;
    uniforms[name] = gl.getUniformLocation(program, name);
  }
  return {program, uniforms};
}

// The model blob (src/view/model_blob.h) as the data texture's floats, the SH coefficients as the
// half floats of the SH texture, and the positions the sort needs.
export function decodeModel(buffer) {
  const magic = String.fromCharCode(...new Uint8Array(buffer, 0, 4));
  const layout = buffer.byteLength >= 16 ? new DataView(buffer).getUint32(4, true) : 0;
  if (magic !== 'SPLV' || !HEADER_BYTES[layout]) throw new Error('/model: not a splat view blob (layout 1 or 2)');
  const head = new DataView(buffer, 0, HEADER_BYTES[layout]), start = HEADER_BYTES[layout];
  const count = head.getUint32(8, true), version = head.getUint32(12, true);
  const shDegree = layout >= 2 ? head.getUint32(16, true) : 0;
  const shValues = shDegree > 0 ? count * (shDegree + 1) ** 2 * 3 : 0;
  if (shDegree > 3) throw new Error(`/model: SH degree ${shDegree}, above 3`);
  if (buffer.byteLength !== start + count * SPLAT_BYTES + 2 * shValues) throw new Error('/model: truncated');
  const f = new Float32Array(buffer, start, count * SPLAT_BYTES / 4);
  const u = new Uint16Array(buffer, start, count * SPLAT_BYTES / 2);
  const rows = Math.max(1, Math.ceil(count / SPLATS_PER_ROW));
  const texels = new Float32Array(rows * SPLATS_PER_ROW * 16);
  const positions = new Float32Array(count * 3);
  for (let i = 0; i < count; i++) {
    const s = i * 11, o = i * 16, c = i * 22 + 18;
    for (let k = 0; k < 3; k++) positions[i * 3 + k] = texels[o + k] = f[s + k];
    texels[o + 3] = u[c + 3] / 65535;
    for (let k = 0; k < 6; k++) texels[o + 4 + k] = f[s + 3 + k];
    for (let k = 0; k < 3; k++) texels[o + 10 + k] = 2 * u[c + k] / 65535;
  }
  const sh = new Uint16Array(buffer, start + count * SPLAT_BYTES, shValues);
  return {count, version, rows, texels, positions, shDegree, sh};
}

export class Renderer {
  constructor(canvas) {
    const gl = canvas.getContext('webgl2', {antialias: false, alpha: false, depth: false,
                                            preserveDrawingBuffer: true});
    if (!gl) throw new Error('this browser has no WebGL2');
    this.gl = gl;
    this.splatProgram = compile(gl, SPLAT_VS, SPLAT_FS);
    this.lineProgram = compile(gl, LINE_VS, LINE_FS);
    // Without float colour buffers (rare in WebGL2) the splats blend in the canvas directly.
    if (gl.getExtension('EXT_color_buffer_float') || gl.getExtension('EXT_color_buffer_half_float')) {
      this.copyProgram = compile(gl, COPY_VS, COPY_FS);
      this.accumTexture = gl.createTexture();
      this.accumFramebuffer = gl.createFramebuffer();
      this.accumSize = [0, 0];
    }
    this.texture = gl.createTexture();
    this.shTexture = gl.createTexture();
    this.shDegree = 0;
    this.indexBuffer = gl.createBuffer();
    this.splatVao = gl.createVertexArray();
    gl.bindVertexArray(this.splatVao);
    gl.bindBuffer(gl.ARRAY_BUFFER, this.indexBuffer);
    gl.enableVertexAttribArray(0);
    gl.vertexAttribIPointer(0, 1, gl.UNSIGNED_INT, 0, 0);
    gl.vertexAttribDivisor(0, 1);
    this.lineBuffer = gl.createBuffer();
    this.lineVao = gl.createVertexArray();
    gl.bindVertexArray(this.lineVao);
    gl.bindBuffer(gl.ARRAY_BUFFER, this.lineBuffer);
    gl.enableVertexAttribArray(0);
    gl.vertexAttribPointer(0, 3, gl.FLOAT, false, 24, 0);
    gl.enableVertexAttribArray(1);
    gl.vertexAttribPointer(1, 3, gl.FLOAT, false, 24, 12);
    gl.bindVertexArray(null);
    this.visible = 0;
    this.lineVertices = 0;
  }

  setModel(model) {
    const gl = this.gl;
    this.setSh(model.sh);
    gl.bindTexture(gl.TEXTURE_2D, this.texture);
    gl.texImage2D(gl.TEXTURE_2D, 0, gl.RGBA32F, SPLATS_PER_ROW * 4, model.rows, 0, gl.RGBA, gl.FLOAT, model.texels);
    gl.texParameteri(gl.TEXTURE_2D, gl.TEXTURE_MIN_FILTER, gl.NEAREST);
    gl.texParameteri(gl.TEXTURE_2D, gl.TEXTURE_MAG_FILTER, gl.NEAREST);
    this.shDegree = model.shDegree;
    this.visible = 0;  // until the worker sorts the new model
  }

  // The coefficients as RGB16F texels in the order of the blob, full rows and then the last.
  setSh(sh) {
    const gl = this.gl, texels = sh.length / 3;
    const full = Math.floor(texels / SH_TEXELS_PER_ROW), rest = texels % SH_TEXELS_PER_ROW;
    const rows = Math.max(1, full + (rest > 0));
    if (rows > gl.getParameter(gl.MAX_TEXTURE_SIZE))
      throw new Error(`the SH coefficients need a texture of ${rows} rows, more than this browser's ` +
                      `${gl.getParameter(gl.MAX_TEXTURE_SIZE)}: open the page with a lower ?sh=`);
    gl.bindTexture(gl.TEXTURE_2D, this.shTexture);
    gl.texImage2D(gl.TEXTURE_2D, 0, gl.RGB16F, SH_TEXELS_PER_ROW, rows, 0, gl.RGB, gl.HALF_FLOAT, null);
    if (full > 0) gl.texSubImage2D(gl.TEXTURE_2D, 0, 0, 0, SH_TEXELS_PER_ROW, full, gl.RGB, gl.HALF_FLOAT, sh, 0);
    if (rest > 0)
      gl.texSubImage2D(gl.TEXTURE_2D, 0, 0, full, rest, 1, gl.RGB, gl.HALF_FLOAT, sh, full * SH_TEXELS_PER_ROW * 3);
    gl.texParameteri(gl.TEXTURE_2D, gl.TEXTURE_MIN_FILTER, gl.NEAREST);
    gl.texParameteri(gl.TEXTURE_2D, gl.TEXTURE_MAG_FILTER, gl.NEAREST);
  }

  // Splat indices back to front.
  setOrder(indices, count) {
    const gl = this.gl;
    gl.bindBuffer(gl.ARRAY_BUFFER, this.indexBuffer);
    gl.bufferData(gl.ARRAY_BUFFER, indices.subarray(0, count), gl.DYNAMIC_DRAW);
    this.visible = count;
  }

  // Interleaved position and colour, two vertices a line.
  setLines(data) {
    const gl = this.gl;
    gl.bindBuffer(gl.ARRAY_BUFFER, this.lineBuffer);
    gl.bufferData(gl.ARRAY_BUFFER, data, gl.STATIC_DRAW);
    this.lineVertices = data.length / 6;
  }

  setCameraUniforms(program, camera, K) {
    const gl = this.gl, u = program.uniforms;
    gl.uniformMatrix3fv(u.u_R, true, camera.R);
    gl.uniform3fv(u.u_t, camera.translation());
    gl.uniform4f(u.u_K, K.fx, K.fy, K.cx, K.cy);
    gl.uniform2f(u.u_size, K.width, K.height);
  }

  // The half-float image the splats blend into, at the drawing size; null without one.
  accumulation(width, height) {
    const gl = this.gl;
    if (!this.copyProgram) return null;
    if (this.accumSize[0] !== width || this.accumSize[1] !== height) {
      gl.bindTexture(gl.TEXTURE_2D, this.accumTexture);
      gl.texImage2D(gl.TEXTURE_2D, 0, gl.RGBA16F, width, height, 0, gl.RGBA, gl.HALF_FLOAT, null);
      for (const p of [gl.TEXTURE_MIN_FILTER, gl.TEXTURE_MAG_FILTER])
        gl.texParameteri(gl.TEXTURE_2D, p, gl.NEAREST);
      gl.bindFramebuffer(gl.FRAMEBUFFER, this.accumFramebuffer);
      gl.framebufferTexture2D(gl.FRAMEBUFFER, gl.COLOR_ATTACHMENT0, gl.TEXTURE_2D,
                              this.accumTexture, 0);
      const complete = gl.checkFramebufferStatus(gl.FRAMEBUFFER) === gl.FRAMEBUFFER_COMPLETE;
      gl.bindFramebuffer(gl.FRAMEBUFFER, null);
      if (!complete) {  // the extension without a renderable RGBA16F: blend in the canvas
        this.copyProgram = null;
        return null;
      }
      this.accumSize = [width, height];
    }
    return this.accumFramebuffer;
  }

  draw(camera, K, background, showLines) {
    const gl = this.gl;
    const accum = this.accumulation(K.width, K.height);
    gl.bindFramebuffer(gl.FRAMEBUFFER, accum);
    gl.viewport(0, 0, K.width, K.height);
    gl.clearColor(background[0], background[1], background[2], 1);
    gl.clear(gl.COLOR_BUFFER_BIT);
    if (this.visible > 0) {
      gl.useProgram(this.splatProgram.program);
      this.setCameraUniforms(this.splatProgram, camera, K);
      gl.activeTexture(gl.TEXTURE0);
      gl.bindTexture(gl.TEXTURE_2D, this.texture);
      gl.uniform1i(this.splatProgram.uniforms.u_splats, 0);
      gl.activeTexture(gl.TEXTURE1);
      gl.bindTexture(gl.TEXTURE_2D, this.shTexture);
      gl.uniform1i(this.splatProgram.uniforms.u_sh, 1);
      gl.uniform1i(this.splatProgram.uniforms.u_sh_degree, this.shDegree);
      gl.enable(gl.BLEND);
      gl.blendFunc(gl.ONE, gl.ONE_MINUS_SRC_ALPHA);
      gl.bindVertexArray(this.splatVao);
      gl.drawArraysInstanced(gl.TRIANGLE_STRIP, 0, 4, this.visible);
      gl.disable(gl.BLEND);
    }
    if (accum) {
      gl.bindFramebuffer(gl.FRAMEBUFFER, null);
      gl.useProgram(this.copyProgram.program);
      gl.activeTexture(gl.TEXTURE0);
      gl.bindTexture(gl.TEXTURE_2D, this.accumTexture);
      gl.uniform1i(this.copyProgram.uniforms.u_image, 0);
      gl.bindVertexArray(null);
      gl.drawArrays(gl.TRIANGLES, 0, 3);
    }
    if (showLines && this.lineVertices > 0) {
      gl.useProgram(this.lineProgram.program);
      this.setCameraUniforms(this.lineProgram, camera, K);
      gl.bindVertexArray(this.lineVao);
      gl.drawArrays(gl.LINES, 0, this.lineVertices);
    }
    gl.bindVertexArray(null);
  }

  // The drawing buffer, RGB bytes top row first.
  pixels() {
    const gl = this.gl, w = gl.drawingBufferWidth, h = gl.drawingBufferHeight;
    const rgba = new Uint8Array(w * h * 4);
    gl.readPixels(0, 0, w, h, gl.RGBA, gl.UNSIGNED_BYTE, rgba);
    const rgb = new Uint8Array(w * h * 3);
    for (let y = 0; y < h; y++)
      for (let x = 0; x < w; x++)
        for (let c = 0; c < 3; c++) rgb[(y * w + x) * 3 + c] = rgba[((h - 1 - y) * w + x) * 4 + c];
    return {width: w, height: h, rgb};
  }
}

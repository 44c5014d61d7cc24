#include "cuda/renderer.h"

#include "cuda/intersect_cuda.h"
#include "cuda/loss_cuda.h"
#include "engine/tiles.h"

namespace splat::cuda {

void PerSplat::carve(Carver& c, int n) {
  proj = {c.take<float>(n * 2), c.take<float>(n),     c.take<float>(n * 3),
          c.take<int>(n * 2),   c.take<float>(n * 3), c.take<float>(n)};
  v = {c.take<float>(n * 2), c.take<float>(n * 3), c.take<float>(n * 3), c.take<float>(n)};
  SplatTiles& t = tiles;
  t.tiles_per_splat = c.take<std::int32_t>(n);
  t.offsets = c.take<std::int32_t>(n);
  t.records = c.take<SplatRecord>(n);
  t.tests = c.take<TileTest>(n);
  t.depth.ids_in = c.take<std::uint32_t>(n);  // iota
  t.depth.keys_in = c.take<std::uint32_t>(n);
  t.depth.keys_out = c.take<std::uint32_t>(n);
  t.depth.ids_out = c.take<std::uint32_t>(n);  // the depth order
  t.scan_temp.bytes = scan_temp_bytes(n);
  t.scan_temp.ptr = c.take<char>(t.scan_temp.bytes);
  t.depth.temp.bytes = sort_temp_bytes(n);
  t.depth.temp.ptr = c.take<char>(t.depth.temp.bytes);
  t.large = c.take<std::uint32_t>(n);
  t.large_count = c.take<std::int32_t>(1);
}

void PerIsect::carve(Carver& c, int m) {
  SortBuffers& b = lists.sort;
  b.keys_in = c.take<std::uint32_t>(m);
  b.keys_out = c.take<std::uint32_t>(m);
  b.ids_in = c.take<std::uint32_t>(m);
  b.ids_out = c.take<std::uint32_t>(m);
  b.temp.bytes = sort_temp_bytes(m);
  b.temp.ptr = c.take<char>(b.temp.bytes);
  lists.capacity = m;
}

void PerTile::carve(Carver& c, int tiles) {
  ranges = c.take<std::uint32_t>(std::size_t(tiles) * 2);
  order = c.take<std::uint32_t>(tiles);
  order_scratch = c.take<std::uint32_t>(std::size_t(tiles) * 3);
  order_temp.bytes = tile_order_temp_bytes(tiles);
  order_temp.ptr = c.take<char>(order_temp.bytes);
}

void PerPixel::carve(Carver& c, std::pair<int, int> wh) {
  const std::size_t px = std::size_t(wh.first) * wh.second;
  image = c.take<float>(px * 3);
  alpha = c.take<float>(px);
  v_image = c.take<float>(px * 3);
  last = c.take<std::uint32_t>(px);
  boundaries = c.take<float4>(boundary_count(wh.first, wh.second));
  loss_scratch = c.take<float>(loss_scratch_floats(wh.first, wh.second));
  sums = c.take<float>(2);
}

Renderer::Renderer(cudaStream_t stream, SyncLog& syncs, StageTimer& timer, bool fast_math)
    : stream_(stream), syncs_(syncs), timer_(timer), fast_math_(fast_math) {
  status_.zero(stream_);
}

ForwardState Renderer::forward(GaussianPtrs params,
                               int n,
                               int K,
                               const Camera& cam,
                               const RasterSettings& rs,
                               Sizing sizing,
                               const CameraParams* device_cam,
                               const float* filter3d) {
  ForwardState fwd;
  PerSplat& sp = splats_.ensure(n);
  const tiles::Grid grid = tiles::Grid::for_image(cam.width, cam.height);
  ProjectParams& pp = fwd.project.params;
  pp = {n, K, rs.sh_degree, rs.antialiased};
  pp.filter3d = filter3d;
  pp.cam = CameraParams::from(cam);
  pp.device_cam = device_cam;
  fwd.project.out = sp.proj;

  timer_.begin("project", stream_);
  project_fwd(pp, params, sp.proj, stream_);
  timer_.end(stream_);

  timer_.begin("intersect", stream_);
  intersect_count(n, sp.proj, grid, sp.tiles, stream_);
  depth_order(n, sp.tiles.depth, stream_);
  intersect_scan(n, sp.tiles, stream_);
  const int end_bit = tile_key_bits(grid.count());
  int m = 0;
  if (sizing == Sizing::Bounded) {
    m = capacity_;
  } else if (n > 0) {
    SPLAT_CUDA_CHECK(cudaMemcpyAsync(count_host_.get(), sp.tiles.offsets + (n - 1),
                                     sizeof(std::int32_t), cudaMemcpyDeviceToHost, stream_));
    syncs_.stream(stream_, "isect_count");  // the step's one wait: buffers below are sized by it
    m = count_host_.get()[0];
    timer_.harvest();  // the previous step's events are complete now
  }
  fwd.intersections = m;
  const IsectBuffers& is = isects_.ensure(m).lists;  // capacity m
  intersect_emit(n, grid, sp.tiles, is, stream_);
  if (sizing == Sizing::Bounded) intersect_pad(n, sp.tiles, is, end_bit, status_.data(), stream_);
  timer_.end(stream_);

  timer_.begin("sort", stream_);
  sort_intersections(m, end_bit, is.sort, stream_);
  PerTile& tl = tiles_.ensure(grid.count());
  tile_ranges(m, is.sort.keys_out, grid.count(), tl.ranges, stream_);
  tile_order(grid.count(), tl.ranges, tl.order_scratch, tl.order_temp, tl.order, stream_);
  timer_.end(stream_);

  timer_.begin("rasterize", stream_);
  PerPixel& px = pixels_.ensure({cam.width, cam.height});
  RasterState& rast = fwd.raster;
  rast.params = {cam.width,  cam.height,
                 grid,       {rs.background[0], rs.background[1], rs.background[2]},
                 fast_math_, rs.alpha_max};
  rast.lists = {is.sort.ids_out, tl.ranges, tl.order, sp.tiles.records};
  rast.out = {px.image, px.alpha, px.last, px.boundaries};
  rasterize_fwd(rast.params, rast.lists, rast.out, stream_);
  timer_.end(stream_);
  return fwd;
}

void Renderer::backward(GaussianPtrs params,
                        const ForwardState& fwd,
                        const RasterOutGrad& v_out,
                        GaussianGradPtrs grads,
                        bool deterministic,
                        const ShAdam* sh_adam,
                        bool means2d_abs,
                        float* pose_terms) {
  PerSplat& sp = splats_.get();
  const int n = fwd.project.params.n;
  const std::size_t count = std::size_t(n);
  sp.v.means2d_abs = means2d_abs ? abs_.ensure(n).means2d_abs : nullptr;
  timer_.begin("rasterize_bwd", stream_);
  if (deterministic) {
    const std::size_t values = count * std::size_t(fixed_values(sp.v));
    rasterize_bwd_deterministic(fwd.raster, v_out, n, fixed_.ensure(values).sums, sp.v, stream_);
  } else {
    SPLAT_CUDA_CHECK(cudaMemsetAsync(sp.v.means2d, 0, count * 2 * sizeof(float), stream_));
    SPLAT_CUDA_CHECK(cudaMemsetAsync(sp.v.conics, 0, count * 3 * sizeof(float), stream_));
    SPLAT_CUDA_CHECK(cudaMemsetAsync(sp.v.colors, 0, count * 3 * sizeof(float), stream_));
    SPLAT_CUDA_CHECK(cudaMemsetAsync(sp.v.opacities, 0, count * sizeof(float), stream_));
    if (means2d_abs)
      SPLAT_CUDA_CHECK(cudaMemsetAsync(sp.v.means2d_abs, 0, count * 2 * sizeof(float), stream_));
    rasterize_bwd(fwd.raster, v_out, sp.v, stream_);
  }
  timer_.end(stream_);
  timer_.begin("project_bwd", stream_);
  // With sh_adam this launch is also the SH coefficients' Adam step: it updates them in place
  // from the gradients it forms and leaves grads.sh unwritten (project.h, ShAdam).
  project_bwd(params, fwd.project, sp.v, grads, stream_, sh_adam, pose_terms);
  timer_.end(stream_);
}

std::array<double, kRenderWorkSums> Renderer::count_work(const ForwardState& fwd) {
  work_.zero(stream_);
  count_render_work(fwd.project.params.n, fwd.project.out.radii, splats_.get().v.colors, fwd.raster,
                    work_.data(), stream_);
  SPLAT_CUDA_CHECK(cudaMemcpyAsync(work_host_.get(), work_.data(),
                                   kRenderWorkSums * sizeof(unsigned long long),
                                   cudaMemcpyDeviceToHost, stream_));
  syncs_.stream(stream_, "work_count");
  std::array<double, kRenderWorkSums> out;
  for (int k = 0; k < kRenderWorkSums; ++k) out[std::size_t(k)] = double(work_host_.get()[k]);
  return out;
}

}  // namespace splat::cuda

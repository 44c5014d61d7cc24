#pragma once
// The whole differentiable renderer on the CPU: project -> intersect + sort -> rasterize, and back.
#include "cpu/intersect_cpu.h"
#include "cpu/project_cpu.h"
#include "cpu/rasterize_cpu.h"

namespace splat::cpu {

// What the forward leaves for the backward.
template <class T>
struct RenderState {
  Projected<T> projected;
  Intersections isect;
  RasterOut<T> raster;
};

template <class T>
RenderState<T> render_fwd(const GaussiansT<T>& g,
                          const Camera& cam,
                          const RasterSettings& rs,
                          FilterVars<T> filter = {}) {
  RenderState<T> st;
  st.projected = project_fwd(g, cam, rs, filter);
  const Projected<T>& p = st.projected;
  st.isect = intersect_tiles(p.means2d, p.radii, p.depths, p.conics,
                             rs.smooth_cutoff ? std::vector<T>{} : p.opacities,
                             TileGrid::for_image(cam.width, cam.height));
  st.raster = rasterize_fwd(st.projected, st.isect, cam.width, cam.height, rs);
  return st;
}

// Gradients of the raw parameters given d loss / d image [H,W,3] and d loss / d alpha [H,W]
// (either may be empty). `filter` is the forward's.
template <class T>
GaussiansT<T> render_bwd(const GaussiansT<T>& g,
                         const Camera& cam,
                         const RasterSettings& rs,
                         const RenderState<T>& st,
                         const std::vector<T>& v_image,
                         const std::vector<T>& v_alpha,
                         FilterVars<T> filter = {}) {
  const ProjectedGrad<T> v =
      rasterize_bwd(st.projected, st.isect, cam.width, cam.height, rs, v_image, v_alpha);
  GaussiansT<T> grads;
  project_bwd(g, cam, rs, st.projected, v, grads, filter);
  return grads;
}

}  // namespace splat::cpu

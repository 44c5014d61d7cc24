// Runs nianticlabs/spz's own code on splat's files (tools/bench/reference_check/run.sh builds it
// against a checkout of that repository; nothing of it is kept here).
//   spz_driver save|save2 MODEL.ply OUT.spz   the reference's .ply -> .spz (version 3 or 2, from RDF)
//   spz_driver compare OURS.spz MODEL.ply     the reference's decoding of OURS against the float model
#include "src/cc/load-spz.h"
#include <cstdio>
#include <cmath>
#include <string>
using namespace spz;
int main(int argc, char** argv) {
  std::string mode = argv[1];
  if (mode == "save" || mode == "save2") {  // save PLY -> spz v3 with the reference, from RDF
    UnpackOptions u; u.to = CoordinateSystem::RDF;
    GaussianCloud g = loadSplatFromPly(argv[2], u);
    PackOptions p; p.version = mode == "save2" ? 2 : 3; p.from = CoordinateSystem::RDF;
    return saveSpz(g, p, argv[3]) ? 0 : 1;
  }
  // compare: load ours (.spz) to RDF with the reference, and the float ply, print max diffs
  UnpackOptions u; u.to = CoordinateSystem::RDF;
  GaussianCloud a = loadSpz(argv[2], u);
  GaussianCloud b = loadSplatFromPly(argv[3], u);
  if (a.numPoints != b.numPoints) { printf("count %d vs %d\n", a.numPoints, b.numPoints); return 1; }
  auto maxdiff = [](const std::vector<float>& x, const std::vector<float>& y) {
    double m = 0; for (size_t i = 0; i < x.size(); ++i) m = std::max(m, (double)std::fabs(x[i] - y[i])); return m; };
  double rot = 0;
  for (int i = 0; i < a.numPoints; ++i) {
    double n = 0, d = 0;
    for (int k = 0; k < 4; ++k) n += b.rotations[4*i+k]*b.rotations[4*i+k];
    for (int k = 0; k < 4; ++k) d += a.rotations[4*i+k]*b.rotations[4*i+k] / std::sqrt(n);
    rot = std::max(rot, 1 - std::fabs(d));
  }
  printf("points %d degree %d/%d\npositions %.6g\nscales %.6g\ncolors %.6g\nsh %.6g\n1-|dot| rotations %.3g\n",
    a.numPoints, a.shDegree, b.shDegree, maxdiff(a.positions, b.positions), maxdiff(a.scales, b.scales),
    maxdiff(a.colors, b.colors), maxdiff(a.sh, b.sh), rot);
  double al = 0; for (int i = 0; i < a.numPoints; ++i) al = std::max(al, std::fabs(1/(1+std::exp(-(double)a.alphas[i])) - 1/(1+std::exp(-(double)b.alphas[i]))));
  printf("alpha (sigmoid) %.6g\n", al);
}

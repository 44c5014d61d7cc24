#!/usr/bin/env bash
# Packs the gsplat source and the glm headers its CUDA code includes into the part
# tools/gpu-machine/carry-peer/ for tools/gpu-machine/peer.sh (the GPU machine has no network, so
# gsplat is built there from source). Carry it like build.sh's parts: env.sh stages it.
#   tools/peer/pack_gsplat.sh GSPLAT_GIT_DIR [GLM_GIT_DIR] [FUSED_SSIM_GIT_DIR]
# FUSED_SSIM_GIT_DIR: a bare clone of rahul-goel/fused-ssim (simple_trainer's SSIM loss; the fetch
# tool's snapshot): its HEAD's sources are packed as fused-ssim.tar.xz and peer.sh builds them.
# GSPLAT_GIT_DIR: a bare clone of nerfstudio-project/gsplat (e.g. the fetch tool's snapshot);
# its tag v1.5.3 is used when present, else its HEAD (with a warning). Only the Python package,
# its CUDA sources, setup.py and LICENSE are packed.
# GLM_GIT_DIR: a bare clone of g-truc/glm holding the commit gsplat pins as its submodule
# (gsplat/cuda/csrc/third_party/glm); without it, or without that commit, Debian's libglm-dev
# headers (/usr/include/glm, installed if missing) are packed instead.
set -euo pipefail
cd "$(dirname "$0")/../.."
[ $# -ge 1 ] || { echo "usage: $0 GSPLAT_GIT_DIR [GLM_GIT_DIR]" >&2; exit 2; }
gs=$1 glm=${2:-} fssim=${3:-}
rev=v1.5.3
if ! git --git-dir="$gs" rev-parse -q --verify "$rev^{commit}" >/dev/null; then
  rev=HEAD
  echo "warning: $gs has no tag v1.5.3; packing its HEAD instead" >&2
fi
version=$(git --git-dir="$gs" show "$rev:gsplat/version.py" | sed -n 's/^__version__ = "\(.*\)"/\1/p')
p=tools/gpu-machine/carry-peer
rm -rf "$p" && mkdir -p "$p"
git --git-dir="$gs" archive --format=tar --prefix=gsplat/ "$rev" gsplat setup.py LICENSE |
  xz -9 >"$p/gsplat.tar.xz"
echo "gsplat $version ($rev, $(git --git-dir="$gs" rev-parse --short "$rev^{commit}")) -> $p/gsplat.tar.xz"

# The tarball holds glm/ (glm/glm.hpp, ...): tools/gpu-machine/peer.sh unpacks it into third_party/glm/.
pin=$(git --git-dir="$gs" ls-tree "$rev" gsplat/cuda/csrc/third_party/glm 2>/dev/null | awk '{print $3}')
if [ -n "$glm" ] && [ -n "$pin" ] && git --git-dir="$glm" cat-file -e "$pin^{commit}" 2>/dev/null; then
  git --git-dir="$glm" archive --format=tar "$pin" glm | xz -9 >"$p/glm.tar.xz"
  echo "glm $(git --git-dir="$glm" describe --tags "$pin" 2>/dev/null || echo "$pin") (gsplat's submodule pin) -> $p/glm.tar.xz"
else
  if [ ! -f /usr/include/glm/glm.hpp ]; then
    apt-get install -y libglm-dev >/dev/null || { apt-get update >/dev/null && apt-get install -y libglm-dev >/dev/null; }
  fi
  tar -C /usr/include -cf - glm | xz -9 >"$p/glm.tar.xz"
  echo "glm from libglm-dev $(dpkg-query -W -f='${Version}' libglm-dev 2>/dev/null) -> $p/glm.tar.xz" \
    "(gsplat pins ${pin:-an unknown commit})"
fi
if [ -n "$fssim" ]; then
  git --git-dir="$fssim" archive --format=tar --prefix=fused-ssim/ HEAD | xz -9 >"$p/fused-ssim.tar.xz"
  echo "fused-ssim $(git --git-dir="$fssim" rev-parse --short HEAD) -> $p/fused-ssim.tar.xz"
else
  echo "warning: no FUSED_SSIM_GIT_DIR: gsplat_mcmc.py will refuse to train without fused_ssim" >&2
fi
du -h "$p"/*.tar.xz

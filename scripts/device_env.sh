# Sourced by the scripts that run on the GPU machine (scripts/device_*.sh), from the repository
# root with .carry/ from scripts/device_build.sh: unpacks the binaries and golden vectors once,
# points the loader at the carried libraries and the tests at the carried data, sets $out.
out=${OUT:-/tmp/splat_out}
mkdir -p "$out"
export LD_LIBRARY_PATH="$PWD/.carry/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export SPLAT_SHARED="$PWD/.carry/shared"
for pack in .carry/bin*.tar.xz; do
  [ -f "$pack" ] && tar -C .carry -xJf "$pack" && rm "$pack"
done
[ -f .carry/golden.tar.xz ] && tar -C .carry/shared -xJf .carry/golden.tar.xz && rm .carry/golden.tar.xz
true

# Sourced by the scripts that run on the GPU machine, from the repository root (README.md beside
# this file). Stages the parts this call carried (tools/gpu-machine/carry*/ from build.sh,
# pack_gsplat.sh) into $carry, where they stay for the warm machine's later calls, unpacks the
# binaries and golden vectors there, points the loader at the staged libraries and the tests at
# the staged data, and sets $state (the machine's state folder) and $out (OUT, else $state/out).
state=${GPU_STATE:-$PWD/tools/gpu-machine/state}
carry=$state/carry
out=${OUT:-$state/out}
mkdir -p "$carry" "$out"
for part in tools/gpu-machine/carry tools/gpu-machine/carry-*; do
  # carry-v holds the candidates' binaries: candidates.sh unpacks those.
  [ -d "$part" ] && [ "$part" != tools/gpu-machine/carry-v ] || continue
  # Moved on the GPU machine (a later call need not stage it again); copied where there is no
  # GPU (a script tried here with GPU_STATE set): the parts are this checkout's build and stay.
  cp -a "$part/." "$carry/" && { ! command -v nvidia-smi >/dev/null || rm -rf "$part"; }
done
for pack in "$carry"/bin*.tar.xz; do
  [ -f "$pack" ] && rm -rf "${pack%.tar.xz}" && tar -C "$carry" -xJf "$pack" && rm "$pack"
done
if [ -f "$carry/golden.tar.xz" ]; then
  rm -rf "$carry/shared/golden" && mkdir -p "$carry/shared" &&
    tar -C "$carry/shared" -xJf "$carry/golden.tar.xz" && rm "$carry/golden.tar.xz"
fi
export LD_LIBRARY_PATH="$carry/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export SPLAT_SHARED="$carry/shared"
# NCCL for multi-GPU runs: PyTorch's wheels bring it on that machine.
with_nccl() {
  local nccl
  nccl=$(python3 -c "import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], 'lib'))" 2>/dev/null)
  [ -z "$nccl" ] || export LD_LIBRARY_PATH="$nccl:$LD_LIBRARY_PATH"
}
true

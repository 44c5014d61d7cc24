#pragma once
// Arithmetic that host code and CUDA kernels must round identically. nvcc contracts a * b + c
// into an FMA unless told not to; these round every operation once, so the CPU reference and the
// GPU compute the same floats bit for bit.
#if defined(__CUDACC__)
#define SPLAT_HD __host__ __device__
#else
#define SPLAT_HD
#endif

namespace splat {

SPLAT_HD inline float mul_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
SPLAT_HD inline float add_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}
SPLAT_HD inline unsigned float_bits(float a) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(a);
#else
  unsigned u;
  __builtin_memcpy(&u, &a, sizeof u);
  return u;
#endif
}
SPLAT_HD inline float div_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fdiv_rn(a, b);
#else
  return a / b;
#endif
}

}  // namespace splat

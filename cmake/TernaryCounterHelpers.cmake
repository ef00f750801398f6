# Flags that determinism needs (GUIDE: "Determinism"), added PRIVATE to each target that
# compiles SPEC arithmetic: no contraction of a*b+c into fma, on the host and on the device.
function(ternarycounter_deterministic_flags target)
  target_compile_options(${target} PRIVATE -ffp-contract=off)
  if(Kokkos_ENABLE_CUDA)
    target_compile_options(${target} PRIVATE --fmad=false)
  endif()
endfunction()

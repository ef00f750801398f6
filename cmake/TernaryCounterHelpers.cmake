# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Flags that determinism needs (GUIDE: "Determinism"), added PRIVATE to each target that
# compiles SPEC arithmetic: no contraction of a*b+c into fma, on the host and on the device.
# They come after the flags of an add_subdirectory parent (CMAKE_CXX_FLAGS) on the command line,
# so they also undo an application's fast-math: -ffinite-math-only would fold the non-finite
# row test (SPEC §3 step 5) to false, and reassociation or reciprocals change the bits.
function(ternarycounter_deterministic_flags target)
  if(CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
    target_compile_options(${target} PRIVATE -fno-fast-math -fno-finite-math-only
                                             -fno-unsafe-math-optimizations)
    # Changes no value (clang's default): GCC if-converts and vectorizes the update's
    # per-weight loop (selects, floorf) only when floating-point exceptions may be ignored.
    target_compile_options(${target} PRIVATE -fno-trapping-math)
  endif()
  target_compile_options(${target} PRIVATE -ffp-contract=off)
  if(Kokkos_ENABLE_CUDA)
    # nvcc's --use_fast_math sets these four; restate the IEEE ones.
    target_compile_options(${target} PRIVATE --fmad=false --ftz=false --prec-div=true
                                             --prec-sqrt=true)
  endif()
endfunction()

# ternarycounter_add_mpi_test(NAME name RANKS n COMMAND exe args...): a test run by mpirun on n
# ranks with TernaryCounter_MPIEXEC_FLAGS. Open MPI needs permission to run as root (CI
# containers); one OpenMP thread per rank keeps oversubscribed ranks from spinning. Under
# AddressSanitizer (the sanitize preset) the leak check is off for these tests: Open MPI's
# plugins, loaded with dlopen and unloaded by MPI_Finalize, leave allocations LeakSanitizer
# reports in "<unknown module>" frames, which no suppression can name; memory errors are still
# reported.
function(ternarycounter_add_mpi_test)
  cmake_parse_arguments(PARSE_ARGV 0 arg "" "NAME;RANKS" "COMMAND")
  add_test(NAME ${arg_NAME}
           COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${arg_RANKS}
                   ${TernaryCounter_MPIEXEC_FLAGS}
                   ${arg_COMMAND})
  set_tests_properties(${arg_NAME} PROPERTIES
    PROCESSORS ${arg_RANKS} LABELS mpi
    ENVIRONMENT "OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1;OMP_PROC_BIND=false;OMP_NUM_THREADS=1;ASAN_OPTIONS=detect_leaks=0")
endfunction()

# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Makes Kokkos::kokkoskernels available to the performance drivers and the examples, for the BLAS
# that needs no fixed order (vendor baselines, FP32 reference models): KokkosBlas::gemm calls
# cuBLAS, rocBLAS or a host BLAS through its TPLs. The library target itself never links it.
#
# Where it comes from, in this order:
#   1. the parent project's Kokkos::kokkoskernels target;
#   2. an installed Kokkos Kernels (find_package: CMAKE_PREFIX_PATH or KokkosKernels_ROOT) built
#      against the installed Kokkos in use (a Kokkos built here has no installed Kernels);
#   3. the pinned commit built here with the BLAS component only: from
#      TernaryCounter_KOKKOSKERNELS_SOURCE (a tarball or a source folder; machines without
#      network), else fetched from the upstream repository.
#
# The commit is a develop commit: no Kokkos Kernels release builds against Kokkos 5.0.2 yet (the
# 4.7.00 tag still uses View::HostMirror).

set(TernaryCounter_KOKKOSKERNELS_COMMIT 2fc2af19fa7b74b64f3ce7a212c0728afd150c62)
set(TernaryCounter_KOKKOSKERNELS_REPOSITORY https://github.com/kokkos/kokkos-kernels.git)
# Kokkos Kernels versions that build against Kokkos 5 (the develop line before 5.0 is 4.7.99).
set(TernaryCounter_KOKKOSKERNELS_MIN_VERSION 4.7.99)

# On our machines (no code host reachable) a copy of the pinned commit sits next to the
# repository; a user's clone has none, and then the default is the upstream fetch.
set(_tc_kk_default_source "")
set(_tc_kk_shared_tarball "${PROJECT_SOURCE_DIR}/../shared/deps/kokkos-kernels-2fc2af19f.tar.gz")
if(EXISTS "${_tc_kk_shared_tarball}")
  file(REAL_PATH "${_tc_kk_shared_tarball}" _tc_kk_default_source)
endif()
set(TernaryCounter_KOKKOSKERNELS_SOURCE "${_tc_kk_default_source}" CACHE PATH
    "Kokkos Kernels ${TernaryCounter_KOKKOSKERNELS_COMMIT} as a tarball or a source folder (no \
download); empty: fetch it from ${TernaryCounter_KOKKOSKERNELS_REPOSITORY}")

# Sets out_var to FALSE when the installed Kokkos Kernels found at KokkosKernels_DIR names another
# Kokkos than the one in use (its config file hints at the Kokkos it was configured with; one
# built next to an in-tree Kokkos and installed with it names none: Kokkos_DIR-NOTFOUND).
function(ternarycounter_kokkoskernels_matches_kokkos out_var)
  set(${out_var} TRUE PARENT_SCOPE)
  file(STRINGS "${KokkosKernels_DIR}/KokkosKernelsConfig.cmake" hint
       REGEX "find_dependency\\(Kokkos HINTS")
  if(hint MATCHES "HINTS[ ]+([^ )]+)" AND NOT CMAKE_MATCH_1 MATCHES "-NOTFOUND$" AND Kokkos_DIR)
    file(REAL_PATH "${CMAKE_MATCH_1}" theirs)
    file(REAL_PATH "${Kokkos_DIR}" ours)
    if(NOT theirs STREQUAL ours)
      set(${out_var} FALSE PARENT_SCOPE)
    endif()
  endif()
endfunction()

function(ternarycounter_find_installed_kokkoskernels)
  if(TernaryCounter_KOKKOS_BUILT_IN_TREE)
    return()  # an installed Kokkos Kernels was built against another Kokkos than this one
  endif()
  find_package(KokkosKernels CONFIG QUIET)
  if(NOT KokkosKernels_FOUND)
    return()
  endif()
  ternarycounter_kokkoskernels_matches_kokkos(same_kokkos)
  if(KokkosKernels_VERSION VERSION_LESS TernaryCounter_KOKKOSKERNELS_MIN_VERSION OR NOT same_kokkos)
    message(FATAL_ERROR
      "TernaryCounter: the Kokkos Kernels ${KokkosKernels_VERSION} found at ${KokkosKernels_DIR} "
      "does not match Kokkos ${Kokkos_VERSION} at ${Kokkos_DIR} (it needs Kokkos Kernels >= "
      "${TernaryCounter_KOKKOSKERNELS_MIN_VERSION} built against that Kokkos). Point "
      "KokkosKernels_ROOT at a matching install, or pass "
      "-DCMAKE_DISABLE_FIND_PACKAGE_KokkosKernels=ON to build the pinned commit instead.")
  endif()
  message(STATUS "TernaryCounter: using Kokkos Kernels ${KokkosKernels_VERSION} from "
                 "${KokkosKernels_DIR}")
endfunction()

# The options of a BLAS-only build, as cache defaults (a user's -D values win).
function(ternarycounter_kokkoskernels_options)
  set(KokkosKernels_ENABLE_ALL_COMPONENTS OFF CACHE BOOL "")
  set(KokkosKernels_ENABLE_COMPONENT_BLAS ON CACHE BOOL "")
  # No pre-instantiation (ETI): the drivers call gemm from two translation units, and the TPL
  # specializations (cuBLAS, rocBLAS, host BLAS) need none. The default ETI compiles the whole
  # BLAS component for every scalar and device: 80 files, about 17 of CI's minutes with CUDA.
  set(KokkosKernels_ADD_DEFAULT_ETI OFF CACHE BOOL "")
  set(KokkosKernels_INST_FLOAT OFF CACHE BOOL "")
  set(KokkosKernels_INST_DOUBLE OFF CACHE BOOL "")
  set(KokkosKernels_ENABLE_TPL_LAPACK OFF CACHE BOOL "")  # otherwise on with BLAS
  set(KokkosKernels_ENABLE_SUPERNODAL_SPTRSV OFF CACHE BOOL "")  # sparse; needs LayoutLeft
  if(Kokkos_ENABLE_CUDA)
    set(KokkosKernels_ENABLE_TPL_CUBLAS ON CACHE BOOL "")
    set(KokkosKernels_ENABLE_TPL_CUSPARSE OFF CACHE BOOL "")
    set(KokkosKernels_ENABLE_TPL_CUSOLVER OFF CACHE BOOL "")
  endif()
  if(Kokkos_ENABLE_HIP)
    # rocBLAS when ROCm has it; otherwise Kokkos Kernels' own gemm.
    find_package(rocblas CONFIG QUIET)
    set(KokkosKernels_ENABLE_TPL_ROCBLAS ${rocblas_FOUND} CACHE BOOL "")
  endif()
  if(NOT DEFINED KokkosKernels_ENABLE_TPL_BLAS)
    # Host BLAS: OpenBLAS, the library install_dependencies.sh installs (a user picks another
    # with -DKokkosKernels_ENABLE_TPL_BLAS=ON -DBLAS_LIBRARIES=...).
    find_library(TernaryCounter_OPENBLAS_LIBRARY openblas
                 DOC "OpenBLAS, the host BLAS TPL of Kokkos Kernels")
    if(TernaryCounter_OPENBLAS_LIBRARY)
      set(KokkosKernels_ENABLE_TPL_BLAS ON CACHE BOOL "")
      set(BLAS_LIBRARIES openblas CACHE STRING "")
    else()
      set(KokkosKernels_ENABLE_TPL_BLAS OFF CACHE BOOL "")
      message(WARNING "TernaryCounter: OpenBLAS was not found: KokkosBlas::gemm on the host runs "
                      "Kokkos Kernels' own kernels (much slower). Debian/Ubuntu: apt-get install "
                      "libopenblas-dev")
    endif()
  endif()
  # OpenBLAS' Fortran symbols are lower case with a trailing underscore; saying so spares Kokkos
  # Kernels the Fortran compiler it would otherwise enable to find out.
  set(F77_BLAS_MANGLE "(name,NAME) name ## _" CACHE STRING "Fortran name mangling of the BLAS")
endfunction()

function(ternarycounter_build_kokkoskernels)
  ternarycounter_kokkoskernels_options()
  include(FetchContent)
  set(source "${TernaryCounter_KOKKOSKERNELS_SOURCE}")
  if(source AND NOT EXISTS "${source}")
    message(FATAL_ERROR "TernaryCounter: TernaryCounter_KOKKOSKERNELS_SOURCE=${source} does not exist")
  elseif(source AND NOT IS_DIRECTORY "${source}")
    FetchContent_Declare(kokkoskernels URL "${source}" DOWNLOAD_EXTRACT_TIMESTAMP TRUE)
  else()
    # A commit, not a branch, pins the source (git checks its hash). A folder given as the source
    # replaces the download (FetchContent's own FETCHCONTENT_SOURCE_DIR_<name> mechanism).
    FetchContent_Declare(kokkoskernels GIT_REPOSITORY "${TernaryCounter_KOKKOSKERNELS_REPOSITORY}"
                         GIT_TAG ${TernaryCounter_KOKKOSKERNELS_COMMIT})
    if(source)
      set(FETCHCONTENT_SOURCE_DIR_KOKKOSKERNELS "${source}")
    else()
      set(source "${TernaryCounter_KOKKOSKERNELS_REPOSITORY} at ${TernaryCounter_KOKKOSKERNELS_COMMIT}")
    endif()
  endif()
  message(STATUS "TernaryCounter: building Kokkos Kernels (BLAS component) from ${source}")
  FetchContent_MakeAvailable(kokkoskernels)
  if(NOT EXISTS "${kokkoskernels_SOURCE_DIR}/blas/src/KokkosBlas3_gemm.hpp")
    message(FATAL_ERROR "TernaryCounter: ${source} is not a Kokkos Kernels source tree")
  endif()
endfunction()

if(NOT TARGET Kokkos::kokkoskernels)
  ternarycounter_find_installed_kokkoskernels()
endif()
if(NOT TARGET Kokkos::kokkoskernels)
  ternarycounter_build_kokkoskernels()
endif()

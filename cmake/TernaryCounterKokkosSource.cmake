# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Provides the Kokkos 5.0.2 release source (pinned by SHA256) under the build tree, through
# FetchContent (content name `kokkos`, so FETCHCONTENT_SOURCE_DIR_KOKKOS and
# FETCHCONTENT_FULLY_DISCONNECTED work as for any FetchContent dependency).
#
# Where it comes from: TernaryCounter_KOKKOS_TARBALL (a local file, no network) when set; else
# the upstream release tarball, and Debian's archive when that download fails. Both addresses
# are checked against the same SHA256, computed from Debian's kokkos_5.0.2.orig.tar.gz (Debian
# ships upstream's release tarball as its .orig.tar.gz; that upstream's bytes are the same was
# not verified from here, where GitHub cannot be reached). Should they differ, the hash check of
# the first download fails and CMake tries the next address, Debian's copy.
#
# Included before project() as well: a CUDA build of a fetched Kokkos needs its nvcc_wrapper
# as the C++ compiler, which must be chosen before the compiler is enabled.

set(TernaryCounter_KOKKOS_VERSION 5.0.2)
set(TernaryCounter_KOKKOS_SHA256 188817bb452ca805ee8701f1c5adbbb4fb83dc8d1c50624566a18a719ba0fa5e)
set(TernaryCounter_KOKKOS_URLS
    "https://github.com/kokkos/kokkos/releases/download/${TernaryCounter_KOKKOS_VERSION}/kokkos-${TernaryCounter_KOKKOS_VERSION}.tar.gz"
    "http://deb.debian.org/debian/pool/main/k/kokkos/kokkos_${TernaryCounter_KOKKOS_VERSION}.orig.tar.gz")
set(TernaryCounter_KOKKOS_TARBALL "" CACHE FILEPATH
    "Local kokkos-${TernaryCounter_KOKKOS_VERSION} release tarball to build Kokkos from (no download)")

# Sets TernaryCounter_KOKKOS_SOURCE_DIR to an extracted, hash-checked Kokkos source tree. A
# download is kept as _deps/kokkos_<version>.orig.tar.gz in the build tree (CI builds other
# configurations from it with TernaryCounter_KOKKOS_TARBALL).
function(ternarycounter_provide_kokkos_source)
  set(root "${CMAKE_BINARY_DIR}/_deps")
  if(TernaryCounter_KOKKOS_TARBALL)
    if(NOT EXISTS "${TernaryCounter_KOKKOS_TARBALL}")
      message(FATAL_ERROR "TernaryCounter: TernaryCounter_KOKKOS_TARBALL=${TernaryCounter_KOKKOS_TARBALL} does not exist")
    endif()
    file(SHA256 "${TernaryCounter_KOKKOS_TARBALL}" actual)
    if(NOT actual STREQUAL TernaryCounter_KOKKOS_SHA256)
      message(FATAL_ERROR "TernaryCounter: ${TernaryCounter_KOKKOS_TARBALL} has SHA256 ${actual}, "
                          "expected ${TernaryCounter_KOKKOS_SHA256}")
    endif()
    set(urls "${TernaryCounter_KOKKOS_TARBALL}")
  else()
    set(urls ${TernaryCounter_KOKKOS_URLS})
  endif()
  include(FetchContent)
  # SOURCE_SUBDIR names a folder without a CMakeLists.txt: FetchContent_MakeAvailable only
  # downloads and extracts; cmake/TernaryCounterKokkos.cmake adds the source itself (and the
  # CUDA path calls this before project(), when no subdirectory can be added yet).
  FetchContent_Declare(kokkos
    URL ${urls}
    URL_HASH SHA256=${TernaryCounter_KOKKOS_SHA256}
    DOWNLOAD_DIR "${root}"
    DOWNLOAD_NAME "kokkos_${TernaryCounter_KOKKOS_VERSION}.orig.tar.gz"
    DOWNLOAD_EXTRACT_TIMESTAMP TRUE
    SOURCE_DIR "${root}/kokkos-${TernaryCounter_KOKKOS_VERSION}"
    SOURCE_SUBDIR bin)
  list(GET urls 0 first)
  message(STATUS "TernaryCounter: Kokkos ${TernaryCounter_KOKKOS_VERSION} from ${first}")
  FetchContent_MakeAvailable(kokkos)
  if(NOT EXISTS "${kokkos_SOURCE_DIR}/CMakeLists.txt")
    message(FATAL_ERROR "TernaryCounter: ${kokkos_SOURCE_DIR} is not a Kokkos source tree")
  endif()
  set(TernaryCounter_KOKKOS_SOURCE_DIR "${kokkos_SOURCE_DIR}" PARENT_SCOPE)
endfunction()

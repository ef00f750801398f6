# Provides the Kokkos 5.0.2 release source (pinned by SHA256) under the build tree.
#
# Where it comes from: TernaryCounter_KOKKOS_TARBALL (a local file) when set, else Debian's
# archive, whose base address is read from this machine's apt configuration (no registry
# address is written in the repository: Debian ships the upstream tarball byte for byte as
# kokkos_5.0.2.orig.tar.gz).
#
# Included before project() as well: a CUDA build of a fetched Kokkos needs its nvcc_wrapper
# as the C++ compiler, which must be chosen before the compiler is enabled.

set(TernaryCounter_KOKKOS_VERSION 5.0.2)
set(TernaryCounter_KOKKOS_SHA256 188817bb452ca805ee8701f1c5adbbb4fb83dc8d1c50624566a18a719ba0fa5e)
set(TernaryCounter_KOKKOS_TARBALL "" CACHE FILEPATH
    "Local kokkos-${TernaryCounter_KOKKOS_VERSION} release tarball to build Kokkos from (no download)")

function(ternarycounter_debian_base_url out_var)
  find_program(TernaryCounter_APT_GET apt-get)
  if(NOT TernaryCounter_APT_GET)
    message(FATAL_ERROR
      "TernaryCounter: Kokkos ${TernaryCounter_KOKKOS_VERSION} was not found and there is no "
      "apt-get to locate Debian's archive. Install Kokkos (and pass Kokkos_ROOT) or pass "
      "-DTernaryCounter_KOKKOS_TARBALL=/path/to/kokkos-${TernaryCounter_KOKKOS_VERSION}.tar.gz")
  endif()
  execute_process(COMMAND ${TernaryCounter_APT_GET} indextargets --format "$(REPO_URI)"
                  OUTPUT_VARIABLE uris RESULT_VARIABLE rc)
  string(REPLACE "\n" ";" uris "${uris}")
  foreach(uri IN LISTS uris)
    if(uri MATCHES "/debian/$")
      set(${out_var} "${uri}" PARENT_SCOPE)
      return()
    endif()
  endforeach()
  message(FATAL_ERROR
    "TernaryCounter: apt's configuration lists no Debian archive (a base ending in /debian/); "
    "pass -DTernaryCounter_KOKKOS_TARBALL=/path/to/kokkos-${TernaryCounter_KOKKOS_VERSION}.tar.gz")
endfunction()

# Sets TernaryCounter_KOKKOS_SOURCE_DIR to an extracted, hash-checked Kokkos source tree.
function(ternarycounter_provide_kokkos_source)
  set(root "${CMAKE_BINARY_DIR}/_deps")
  set(source "${root}/kokkos-${TernaryCounter_KOKKOS_VERSION}")
  set(TernaryCounter_KOKKOS_SOURCE_DIR "${source}" PARENT_SCOPE)
  if(EXISTS "${source}/CMakeLists.txt")
    return()
  endif()
  set(tarball "${root}/kokkos_${TernaryCounter_KOKKOS_VERSION}.orig.tar.gz")
  if(TernaryCounter_KOKKOS_TARBALL)
    file(SHA256 "${TernaryCounter_KOKKOS_TARBALL}" actual)
    if(NOT actual STREQUAL TernaryCounter_KOKKOS_SHA256)
      message(FATAL_ERROR "TernaryCounter: ${TernaryCounter_KOKKOS_TARBALL} has SHA256 ${actual}, "
                          "expected ${TernaryCounter_KOKKOS_SHA256}")
    endif()
    set(tarball "${TernaryCounter_KOKKOS_TARBALL}")
  else()
    ternarycounter_debian_base_url(base)
    set(url "${base}pool/main/k/kokkos/kokkos_${TernaryCounter_KOKKOS_VERSION}.orig.tar.gz")
    message(STATUS "TernaryCounter: downloading Kokkos ${TernaryCounter_KOKKOS_VERSION} from ${url}")
    file(DOWNLOAD "${url}" "${tarball}" EXPECTED_HASH SHA256=${TernaryCounter_KOKKOS_SHA256}
         STATUS status)
    list(GET status 0 code)
    if(NOT code EQUAL 0)
      message(FATAL_ERROR "TernaryCounter: could not download ${url}: ${status}")
    endif()
  endif()
  file(ARCHIVE_EXTRACT INPUT "${tarball}" DESTINATION "${root}")
  if(NOT EXISTS "${source}/CMakeLists.txt")
    message(FATAL_ERROR "TernaryCounter: ${tarball} did not contain kokkos-${TernaryCounter_KOKKOS_VERSION}/")
  endif()
endfunction()

# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# nlohmann_json, the JSON reader of checkpoint headers. Header-only and private to the library:
# src/ links it as a build-time dependency only ($<BUILD_INTERFACE:...>), so neither the installed
# package's config nor an application that adds this project as a subdirectory needs it.
#
# An installed nlohmann_json >= 3.10 is used when found (Debian/Ubuntu: nlohmann-json3-dev, which
# cmake/install_dependencies.sh installs). Otherwise the 3.11.2 source is fetched, pinned by
# SHA256: Debian's nlohmann-json3_3.11.2.orig.tar.gz, whose hash was computed here from the
# downloaded file (and matches the Checksums-Sha256 of Debian's nlohmann-json3_3.11.2-2.dsc).
# Debian made that file from the upstream tag's GitHub archive, listed second: not verified
# byte for byte here, and CMake tries the next address when a download's hash does not match.
set(TernaryCounter_JSON_VERSION 3.11.2)
set(TernaryCounter_JSON_SHA256 d69f9deb6a75e2580465c6c4c5111b89c4dc2fa94e3a85fcd2ffcd9a143d9273)
set(TernaryCounter_JSON_URLS
    "http://deb.debian.org/debian/pool/main/n/nlohmann-json3/nlohmann-json3_${TernaryCounter_JSON_VERSION}.orig.tar.gz"
    "https://github.com/nlohmann/json/archive/refs/tags/v${TernaryCounter_JSON_VERSION}.tar.gz")

if(NOT TARGET nlohmann_json::nlohmann_json)
  find_package(nlohmann_json 3.10 QUIET)
endif()
if(TARGET nlohmann_json::nlohmann_json)
  set(TernaryCounter_JSON_TARGET nlohmann_json::nlohmann_json)
  message(STATUS "TernaryCounter: using nlohmann_json ${nlohmann_json_VERSION} from ${nlohmann_json_DIR}")
elseif(TARGET ternarycounter_nlohmann_json)
  set(TernaryCounter_JSON_TARGET ternarycounter_nlohmann_json)
else()
  include(FetchContent)
  # SOURCE_SUBDIR names a folder without a CMakeLists.txt: the source is only downloaded and
  # extracted, its own project (tests, install rules) is not added to this build.
  FetchContent_Declare(ternarycounter_nlohmann_json
    URL ${TernaryCounter_JSON_URLS}
    URL_HASH SHA256=${TernaryCounter_JSON_SHA256}
    DOWNLOAD_EXTRACT_TIMESTAMP TRUE
    SOURCE_SUBDIR single_include)
  message(STATUS "TernaryCounter: nlohmann_json >= 3.10 not found; fetching ${TernaryCounter_JSON_VERSION}")
  FetchContent_MakeAvailable(ternarycounter_nlohmann_json)
  add_library(ternarycounter_nlohmann_json INTERFACE)
  target_include_directories(ternarycounter_nlohmann_json SYSTEM INTERFACE
                             "${ternarycounter_nlohmann_json_SOURCE_DIR}/single_include")
  set(TernaryCounter_JSON_TARGET ternarycounter_nlohmann_json)
endif()

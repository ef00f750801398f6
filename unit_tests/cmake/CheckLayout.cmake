# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# cmake -DSOURCE=<repository>/src -P CheckLayout.cmake
# The layout's rules (docs/DESIGN.md, "Layout of the repository"):
# - no private file (a feature's impl/, vendor/) includes a public call's header: dependencies
#   run from the calls down to the engines, never back up;
# - no public call's header includes another call's header (shared types live in core/);
# - no file in src/ is over 600 lines.
cmake_minimum_required(VERSION 3.23)
# The library's calls (src/distributed/impl/ reads Distributed::Field from its call header).
set(call_headers TernaryCounter_Linear.hpp TernaryCounter_Update.hpp
                 TernaryCounter_UpdateFromIO.hpp TernaryCounter_Checkpoint.hpp
                 TernaryCounter_LayerCheckpoint.hpp TernaryCounter_TernaryLinear.hpp)
set(plain_calls TernaryCounter_Linear.hpp TernaryCounter_Update.hpp
                TernaryCounter_UpdateFromIO.hpp TernaryCounter_Checkpoint.hpp)
set(failures "")
file(GLOB_RECURSE files RELATIVE "${SOURCE}" "${SOURCE}/*.hpp" "${SOURCE}/*.cpp")
foreach(file IN LISTS files)
  file(READ "${SOURCE}/${file}" text)
  string(REGEX MATCHALL "\n" newlines "${text}")
  list(LENGTH newlines count)
  if(count GREATER 600)
    string(APPEND failures "\n  ${file}: ${count} lines (at most 600)")
  endif()
  get_filename_component(name "${file}" NAME)
  set(private FALSE)
  if(file MATCHES "(^|/)impl/" OR file MATCHES "^vendor/")
    set(private TRUE)
  endif()
  file(STRINGS "${SOURCE}/${file}" includes REGEX "^#include [\"<]")
  foreach(line IN LISTS includes)
    string(REGEX REPLACE "^#include [\"<]([^\">]+)[\">].*" "\\1" included "${line}")
    get_filename_component(included_name "${included}" NAME)
    if(private AND included_name IN_LIST call_headers)
      string(APPEND failures "\n  ${file}: a private file includes the call header ${included}")
    endif()
    if(name IN_LIST plain_calls AND included_name IN_LIST plain_calls)
      string(APPEND failures "\n  ${file}: a call header includes another call's ${included}")
    endif()
  endforeach()
endforeach()
list(LENGTH files checked)
if(checked LESS 20)
  message(FATAL_ERROR "only ${checked} files under ${SOURCE}: is SOURCE the library's src/?")
endif()
if(failures)
  message(FATAL_ERROR "the layout's rules are broken:${failures}")
endif()
message(STATUS "layout: ${checked} files in src/ follow the include rules and the 600-line limit")

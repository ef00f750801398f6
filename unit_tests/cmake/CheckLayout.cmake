# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# cmake -DSOURCE=<repository>/src -P CheckLayout.cmake
# The layout's rules (docs/DESIGN.md, "Layout of the repository"). The folders of src/ are layers,
# each including only its own files and the layers below it:
#   core (0) < engines (1, with engines/vendor) < products, update (2) < nn (3) < checkpoint (4)
#   < distributed (5) < the umbrella TernaryCounter.hpp
# - no include upward (a lower layer never sees a higher one);
# - no include between two folders of one layer (so no two folders include each other);
# - no include of another folder's impl/ (impl/ is private to its folder);
# - no private file (impl/, engines/) includes a public call's header: dependencies run from the
#   calls down to the engines, never back up;
# - no file in src/ is over 600 lines.
cmake_minimum_required(VERSION 3.23)
set(layer_core 0)
set(layer_engines 1)
set(layer_products 2)
set(layer_update 2)
set(layer_nn 3)
set(layer_checkpoint 4)
set(layer_distributed 5)
set(layer_. 6)
# The library's calls (src/distributed/impl/ reads Distributed::Field from its call header).
set(call_headers TernaryCounter_Linear.hpp TernaryCounter_Update.hpp
                 TernaryCounter_UpdateFromIO.hpp TernaryCounter_Checkpoint.hpp
                 TernaryCounter_LayerCheckpoint.hpp TernaryCounter_TernaryLinear.hpp)

set(failures "")
file(GLOB_RECURSE files RELATIVE "${SOURCE}" "${SOURCE}/*.hpp" "${SOURCE}/*.cpp")
# Where each file lives, so an include by its bare name (a public header) resolves to a folder.
foreach(file IN LISTS files)
  get_filename_component(name "${file}" NAME)
  set(path_of_${name} "${file}")
endforeach()

# The folder (layer) and whether the path is inside an impl/.
function(describe path out_folder out_private)
  string(REGEX MATCH "^[^/]+/" top "${path}")
  if(top STREQUAL "")
    set(folder ".")
  else()
    string(REGEX REPLACE "/$" "" folder "${top}")
  endif()
  set(${out_folder} "${folder}" PARENT_SCOPE)
  if(path MATCHES "(^|/)impl/")
    set(${out_private} TRUE PARENT_SCOPE)
  else()
    set(${out_private} FALSE PARENT_SCOPE)
  endif()
endfunction()

foreach(file IN LISTS files)
  file(READ "${SOURCE}/${file}" text)
  string(REGEX MATCHALL "\n" newlines "${text}")
  list(LENGTH newlines count)
  if(count GREATER 600)
    string(APPEND failures "\n  ${file}: ${count} lines (at most 600)")
  endif()
  describe("${file}" folder private)
  if(NOT DEFINED layer_${folder})
    string(APPEND failures "\n  ${file}: the folder ${folder}/ has no layer in CheckLayout.cmake")
    continue()
  endif()
  if(folder STREQUAL "engines")
    set(private TRUE)
  endif()
  file(STRINGS "${SOURCE}/${file}" includes REGEX "^#include [\"<]")
  foreach(line IN LISTS includes)
    string(REGEX REPLACE "^#include [\"<]([^\">]+)[\">].*" "\\1" included "${line}")
    get_filename_component(included_name "${included}" NAME)
    string(REGEX MATCH "^[^/]+" first "${included}")
    if(included MATCHES "/" AND DEFINED layer_${first})
      set(target "${included}")
      if(NOT EXISTS "${SOURCE}/${target}")
        string(APPEND failures "\n  ${file}: includes ${included}, which is not in src/")
        continue()
      endif()
    elseif(NOT included MATCHES "/" AND DEFINED path_of_${included_name})
      set(target "${path_of_${included_name}}")
    else()
      continue()  # not the library's (a system or third-party header)
    endif()
    describe("${target}" target_folder target_private)
    if(private AND included_name IN_LIST call_headers)
      string(APPEND failures "\n  ${file}: a private file includes the call header ${included}")
    endif()
    if(target_folder STREQUAL folder)
      continue()
    endif()
    if(target_private)
      string(APPEND failures "\n  ${file}: includes ${included}, private to ${target_folder}/")
    endif()
    if(layer_${target_folder} GREATER layer_${folder})
      string(APPEND failures
             "\n  ${file}: includes ${included} of ${target_folder}/, a layer above ${folder}/")
    elseif(layer_${target_folder} EQUAL layer_${folder})
      string(APPEND failures
             "\n  ${file}: includes ${included} of ${target_folder}/, beside ${folder}/ in its layer")
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
message(STATUS "layout: ${checked} files in src/ follow the layers, the include rules and the "
               "600-line limit")

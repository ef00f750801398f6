# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# cmake -DSOURCE=<repo> -P CheckSpecPaths.cmake
# The paths docs/SPEC.md names exist in the repository (`<case>` stands for any case folder;
# `shared/...` is the team's folder next to the repository, not part of it), and every file of a
# conformance case that §5 lists is in at least one case folder of unit_tests/data/conformance.
cmake_minimum_required(VERSION 3.23)
file(READ "${SOURCE}/docs/SPEC.md" text)
# List separators and brackets in the prose would split or group the matches below.
string(REGEX REPLACE "[][;]" " " text "${text}")
string(REGEX MATCHALL "`[^`]*`" quoted "${text}")
set(checked 0)
foreach(token IN LISTS quoted)
  string(REGEX REPLACE "^`(.*)`$" "\\1" token "${token}")
  if(NOT token MATCHES "^[A-Za-z0-9_.<>-]+(/[A-Za-z0-9_.<>-]+)*/?$" OR NOT token MATCHES "/"
     OR token MATCHES "^shared/")
    continue()
  endif()
  string(REPLACE "<case>" "*" pattern "${token}")
  string(REGEX REPLACE "/$" "" pattern "${pattern}")
  file(GLOB found LIST_DIRECTORIES true "${SOURCE}/${pattern}")
  if(NOT found)
    message(FATAL_ERROR "docs/SPEC.md names `${token}`, which is not in the repository")
  endif()
  math(EXPR checked "${checked} + 1")
endforeach()

string(FIND "${text}" "## 5." begin)
if(begin EQUAL -1)
  message(FATAL_ERROR "docs/SPEC.md has no section 5")
endif()
string(SUBSTRING "${text}" ${begin} -1 section)
string(REGEX MATCHALL "`[a-z_]+\\.(u8|f32|txt)[ `]" files "${section}")
# Kept only by the copies in shared/conformance (§5 says so): the packed codes after the update.
set(shared_only state_out.u8)
set(names 0)
foreach(name IN LISTS files)
  string(REGEX REPLACE "^`([^ `]+).*" "\\1" name "${name}")
  if(name IN_LIST shared_only)
    continue()
  endif()
  file(GLOB found "${SOURCE}/unit_tests/data/conformance/*/${name}")
  if(NOT found)
    message(FATAL_ERROR "docs/SPEC.md §5 lists `${name}`, which no case in "
                        "unit_tests/data/conformance has")
  endif()
  math(EXPR names "${names} + 1")
endforeach()
if(checked LESS 3 OR names LESS 10)
  message(FATAL_ERROR "docs/SPEC.md: only ${checked} paths and ${names} case files found")
endif()
message(STATUS "docs/SPEC.md: ${checked} paths and ${names} case files exist")

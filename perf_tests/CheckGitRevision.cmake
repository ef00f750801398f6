# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# cmake -DWORK=<scratch folder> -P CheckGitRevision.cmake
# What GitRevision.cmake writes, in a scratch repository: a clean checkout's `git describe --always
# --dirty` with an empty diff hash; a dirty one's "-dirty" revision with the SHA-256 of `git diff
# HEAD` (as `git diff HEAD | sha256sum` prints it), another hash for another edit; "unknown" for
# both in a source tree without its own .git even when it lies inside another repository; the
# environment's revision (and hash, else "unknown") when it sets one; and an unchanged header
# (same time stamp) when nothing changed.
cmake_minimum_required(VERSION 3.23)
set(script "${CMAKE_CURRENT_LIST_DIR}/GitRevision.cmake")
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}/no_git_source")

# Sets <out>_revision and <out>_diff to what GitRevision.cmake writes for `source`.
function(revision_of source out)
  execute_process(COMMAND ${CMAKE_COMMAND} -E env --unset=TERNARYCOUNTER_GIT_REVISION
                          --unset=TERNARYCOUNTER_GIT_DIFF_SHA256 ${ARGN}
                          ${CMAKE_COMMAND} -DSOURCE_DIR=${source} -DOUTPUT=${WORK}/header.hpp
                          -P ${script} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "GitRevision.cmake failed (${rc})")
  endif()
  file(READ "${WORK}/header.hpp" header)
  if(NOT header MATCHES "TERNARYCOUNTER_GIT_REVISION \"([^\"]*)\"")
    message(FATAL_ERROR "no revision in ${WORK}/header.hpp")
  endif()
  set(${out}_revision "${CMAKE_MATCH_1}" PARENT_SCOPE)
  if(NOT header MATCHES "TERNARYCOUNTER_GIT_DIFF_SHA256 \"([^\"]*)\"")
    message(FATAL_ERROR "no diff hash in ${WORK}/header.hpp")
  endif()
  set(${out}_diff "${CMAKE_MATCH_1}" PARENT_SCOPE)
endfunction()

function(expect what actual expected)
  if(NOT "${actual}" STREQUAL "${expected}")
    message(FATAL_ERROR "${what}: '${actual}', expected '${expected}'")
  endif()
endfunction()

# WORK is under the build tree, often itself inside a checkout: git would find that one.
revision_of("${WORK}/no_git_source" r)
expect("revision of a tree without .git" "${r_revision}" "unknown")
expect("diff hash of a tree without .git" "${r_diff}" "unknown")
# The environment's revision wins (a copy whose git metadata is not its own); without a hash
# from the environment too, the tree is not called clean.
revision_of("${WORK}/no_git_source" r TERNARYCOUNTER_GIT_REVISION=0123456789ab)
expect("TERNARYCOUNTER_GIT_REVISION=0123456789ab" "${r_revision}" "0123456789ab")
expect("diff hash without TERNARYCOUNTER_GIT_DIFF_SHA256" "${r_diff}" "unknown")
revision_of("${WORK}/no_git_source" r TERNARYCOUNTER_GIT_REVISION=0123456789ab-dirty
            TERNARYCOUNTER_GIT_DIFF_SHA256=feed)
expect("TERNARYCOUNTER_GIT_DIFF_SHA256=feed" "${r_diff}" "feed")

find_package(Git QUIET)
find_program(SHA256SUM sha256sum)
find_program(SH sh)
if(NOT GIT_FOUND OR NOT SHA256SUM OR NOT SH)
  message(STATUS "git, sha256sum or sh missing: only the 'unknown' and environment cases checked")
  file(REMOVE_RECURSE "${WORK}")
  return()
endif()

set(repo "${WORK}/repo")
file(MAKE_DIRECTORY "${repo}")
function(git)
  execute_process(COMMAND "${GIT_EXECUTABLE}" -C "${repo}" -c user.name=check
                          -c user.email=check@localhost ${ARGN}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err
                  OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "git ${ARGN} failed (${rc}): ${err}")
  endif()
  set(git_out "${out}" PARENT_SCOPE)
endfunction()
# What the documented command prints for the scratch repository's uncommitted changes.
function(diff_sha256_of_checkout out_var)
  execute_process(COMMAND "${SH}" -c "\"${GIT_EXECUTABLE}\" diff HEAD | \"${SHA256SUM}\""
                  WORKING_DIRECTORY "${repo}" OUTPUT_VARIABLE printed RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0 OR NOT printed MATCHES "^([0-9a-f]+)")
    message(FATAL_ERROR "git diff HEAD | sha256sum failed: '${printed}'")
  endif()
  set(${out_var} "${CMAKE_MATCH_1}" PARENT_SCOPE)
endfunction()

git(init -q)
file(WRITE "${repo}/kernel.cpp" "int f() { return 1; }\n")
git(add kernel.cpp)
git(commit -q -m "a commit")
git(describe --always --dirty --abbrev=12)
set(clean "${git_out}")

revision_of("${repo}" r)
expect("revision of a clean checkout" "${r_revision}" "${clean}")
expect("diff hash of a clean checkout" "${r_diff}" "")
# A second run with nothing changed leaves the header alone (no rebuild of the drivers).
file(TIMESTAMP "${WORK}/header.hpp" before "%Y-%m-%dT%H:%M:%S.%f")
execute_process(COMMAND ${CMAKE_COMMAND} -E sleep 1.1)
revision_of("${repo}" again)
file(TIMESTAMP "${WORK}/header.hpp" after "%Y-%m-%dT%H:%M:%S.%f")
expect("the header's time stamp after an unchanged run" "${after}" "${before}")

file(WRITE "${repo}/kernel.cpp" "int f() { return 2; }\n")
diff_sha256_of_checkout(expected)
revision_of("${repo}" r)
expect("revision of an edited checkout" "${r_revision}" "${clean}-dirty")
expect("diff hash of an edited checkout" "${r_diff}" "${expected}")
set(first_edit "${r_diff}")

file(WRITE "${repo}/kernel.cpp" "int f() { return 3; }\n")
diff_sha256_of_checkout(expected)
revision_of("${repo}" r)
expect("diff hash of another edit" "${r_diff}" "${expected}")
if(r_diff STREQUAL first_edit)
  message(FATAL_ERROR "two different edits gave one diff hash ${r_diff}")
endif()
message(STATUS "clean ${clean}; dirty ${r_revision} + diff sha256; unknown without .git; "
               "environment; header kept when unchanged")
file(REMOVE_RECURSE "${WORK}")

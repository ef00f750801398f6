# cmake -DSOURCE_DIR=<repo> -DWORK=<scratch folder> -P CheckGitRevision.cmake
# What GitRevision.cmake writes: the checkout's `git describe --always --dirty` (when SOURCE_DIR
# is a checkout and git is there), "unknown" for a source tree without its own .git even when it
# lies inside another repository, TERNARYCOUNTER_GIT_REVISION when the environment sets it, and
# an unchanged header (same time stamp) when nothing changed.
cmake_minimum_required(VERSION 3.23)
set(script "${CMAKE_CURRENT_LIST_DIR}/GitRevision.cmake")
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}/no_git_source")

function(revision_of source out_var)
  execute_process(COMMAND ${CMAKE_COMMAND} -E env --unset=TERNARYCOUNTER_GIT_REVISION ${ARGN}
                          ${CMAKE_COMMAND} -DSOURCE_DIR=${source} -DOUTPUT=${WORK}/header.hpp
                          -P ${script} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "GitRevision.cmake failed (${rc})")
  endif()
  file(STRINGS "${WORK}/header.hpp" line REGEX "#define TERNARYCOUNTER_GIT_REVISION")
  if(NOT line MATCHES "TERNARYCOUNTER_GIT_REVISION \"([^\"]*)\"")
    message(FATAL_ERROR "no revision in ${WORK}/header.hpp")
  endif()
  set(${out_var} "${CMAKE_MATCH_1}" PARENT_SCOPE)
endfunction()

# WORK is under the build tree, often itself inside the checkout: git would find that one.
revision_of("${WORK}/no_git_source" revision)
if(NOT revision STREQUAL "unknown")
  message(FATAL_ERROR "a source tree without .git reported revision '${revision}'")
endif()
# The environment's revision wins (a copy whose git metadata is not its own).
revision_of("${SOURCE_DIR}" revision TERNARYCOUNTER_GIT_REVISION=0123456789ab)
if(NOT revision STREQUAL "0123456789ab")
  message(FATAL_ERROR "TERNARYCOUNTER_GIT_REVISION=0123456789ab gave '${revision}'")
endif()

find_package(Git QUIET)
if(GIT_FOUND AND EXISTS "${SOURCE_DIR}/.git")
  revision_of("${SOURCE_DIR}" revision)
  execute_process(COMMAND "${GIT_EXECUTABLE}" -C "${SOURCE_DIR}" describe --always --dirty
                          --abbrev=12
                  OUTPUT_VARIABLE expected OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT revision STREQUAL expected)
    message(FATAL_ERROR "revision '${revision}', git describe says '${expected}'")
  endif()
  # A second run with nothing changed leaves the header alone (no rebuild of the drivers).
  file(TIMESTAMP "${WORK}/header.hpp" before "%Y-%m-%dT%H:%M:%S.%f")
  execute_process(COMMAND ${CMAKE_COMMAND} -E sleep 1.1)
  revision_of("${SOURCE_DIR}" again)
  file(TIMESTAMP "${WORK}/header.hpp" after "%Y-%m-%dT%H:%M:%S.%f")
  if(NOT before STREQUAL after)
    message(FATAL_ERROR "the header was rewritten although the revision did not change")
  endif()
  message(STATUS "revision ${revision}; unknown without .git; header kept when unchanged")
else()
  message(STATUS "no git checkout at ${SOURCE_DIR}: only the 'unknown' case was checked")
endif()
file(REMOVE_RECURSE "${WORK}")

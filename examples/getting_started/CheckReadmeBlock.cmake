# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# cmake -DREADME=<README.md> -DSOURCE=<file> -P CheckReadmeBlock.cmake
# The README's code block that follows the line "<!-- <file name> -->" is the file, byte for byte
# (the block's ```cpp fence lines excluded).
get_filename_component(name "${SOURCE}" NAME)
file(READ "${README}" readme)
file(READ "${SOURCE}" source)
set(marker "<!-- ${name} -->")
string(FIND "${readme}" "${marker}" at)
if(at EQUAL -1)
  message(FATAL_ERROR "${README} has no line '${marker}' before the code block of ${SOURCE}")
endif()
string(SUBSTRING "${readme}" ${at} -1 rest)
# The block: from the first "```cpp" line after the marker to the next "```" line.
string(FIND "${rest}" "\n```cpp\n" open)
if(open EQUAL -1)
  message(FATAL_ERROR "${README}: no ```cpp block after '${marker}'")
endif()
math(EXPR open "${open} + 8")
string(SUBSTRING "${rest}" ${open} -1 rest)
string(FIND "${rest}" "\n```\n" close)
if(close EQUAL -1)
  message(FATAL_ERROR "${README}: the ```cpp block after '${marker}' is not closed")
endif()
math(EXPR close "${close} + 1")
string(SUBSTRING "${rest}" 0 ${close} block)
if(NOT block STREQUAL source)
  file(WRITE "${CMAKE_CURRENT_BINARY_DIR}/readme_block_${name}" "${block}")
  message(FATAL_ERROR "the README's block after '${marker}' differs from ${SOURCE} (the block is "
                      "in ${CMAKE_CURRENT_BINARY_DIR}/readme_block_${name}): copy the file into it")
endif()
message(STATUS "the README's block is ${SOURCE}")

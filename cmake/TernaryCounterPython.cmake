# TernaryCounter_ENABLE_PYTHON: the Python package (python/), on by default in a top-level host or
# CUDA build (CUDA: the PyTorch layer takes CUDA tensors; HIP builds leave it out: its tensor
# calls are written for CUDA and the host; no sanitizer flags: an instrumented module
# cannot load into an uninstrumented interpreter) when a Python 3 interpreter with its development
# headers, NumPy and pybind11 are found. Included before Kokkos:
# the extension module is a shared object, so the static library and an in-tree Kokkos are
# compiled position-independent when it is on (the arithmetic is the same; only addressing
# changes).
#
# The interpreter is the first of Python3_EXECUTABLE (when given), `python3` on PATH and the
# system's /usr/bin/python3 that imports numpy: a version manager's python3 (pyenv) first on PATH
# often lacks the Debian packages install_dependencies.sh installs for the system interpreter.

if(DEFINED TernaryCounter_ENABLE_PYTHON AND NOT TernaryCounter_ENABLE_PYTHON)
  return()
endif()
if(NOT DEFINED TernaryCounter_ENABLE_PYTHON
   AND (NOT PROJECT_IS_TOP_LEVEL OR Kokkos_ENABLE_HIP OR CMAKE_CXX_FLAGS MATCHES "-fsanitize"))
  option(TernaryCounter_ENABLE_PYTHON "Build the Python package (python/)" OFF)
  return()
endif()

set(_tc_python_candidates)
if(Python3_EXECUTABLE)
  list(APPEND _tc_python_candidates "${Python3_EXECUTABLE}")
else()
  find_program(_tc_python_on_path NAMES python3 NO_CACHE)
  if(_tc_python_on_path)
    list(APPEND _tc_python_candidates "${_tc_python_on_path}")
  endif()
  if(EXISTS /usr/bin/python3)
    list(APPEND _tc_python_candidates /usr/bin/python3)
  endif()
endif()
set(_tc_python_with_numpy "")
foreach(_tc_candidate IN LISTS _tc_python_candidates)
  execute_process(COMMAND "${_tc_candidate}" -c "import numpy" RESULT_VARIABLE _tc_numpy_result
                  OUTPUT_QUIET ERROR_QUIET)
  if(_tc_numpy_result EQUAL 0)
    set(_tc_python_with_numpy "${_tc_candidate}")
    break()
  endif()
endforeach()

set(_tc_python_found OFF)
if(_tc_python_with_numpy)
  set(Python3_EXECUTABLE "${_tc_python_with_numpy}" CACHE FILEPATH "The Python package's interpreter")
  find_package(Python3 COMPONENTS Interpreter Development.Module QUIET)
  if(Python3_FOUND)
    find_package(pybind11 CONFIG QUIET)
    if(pybind11_FOUND)
      set(_tc_python_found ON)
    endif()
  endif()
endif()

option(TernaryCounter_ENABLE_PYTHON
       "Build the Python package (python/: pybind11, NumPy; its pytest suite runs under ctest)"
       ${_tc_python_found})
if(TernaryCounter_ENABLE_PYTHON)
  if(NOT _tc_python_found)
    message(FATAL_ERROR "TernaryCounter_ENABLE_PYTHON: needs a Python 3 interpreter that imports "
                        "numpy, its development headers and pybind11 (Debian: python3-dev "
                        "python3-numpy pybind11-dev; cmake/install_dependencies.sh installs them)")
  endif()
  message(STATUS "TernaryCounter: Python package for ${Python3_EXECUTABLE} (pybind11 ${pybind11_VERSION})")
  set(CMAKE_POSITION_INDEPENDENT_CODE ON)
else()
  message(STATUS "TernaryCounter: no Python package (needs python3-dev, python3-numpy, pybind11-dev)")
endif()

# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Installs the library with a package config so that find_package(TernaryCounter) works.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(TARGETS ternarycounter EXPORT TernaryCounterTargets
        FILE_SET HEADERS DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        FILE_SET umbrella DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
# The component Distributed has its own export file, which the config loads only when asked for
# it (it needs MPI).
if(TernaryCounter_ENABLE_MPI)
  install(TARGETS ternarycounter_distributed EXPORT TernaryCounterDistributedTargets
          FILE_SET HEADERS DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
  install(EXPORT TernaryCounterDistributedTargets NAMESPACE TernaryCounter::
          DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/TernaryCounter)
endif()
if(TernaryCounter_ENABLE_NCCL)
  # The config recreates NCCL::NCCL with the same search.
  install(FILES ${CMAKE_CURRENT_LIST_DIR}/TernaryCounterFindNCCL.cmake
          DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/TernaryCounter)
endif()
install(EXPORT TernaryCounterTargets NAMESPACE TernaryCounter::
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/TernaryCounter)
# The Kokkos the package was built with, when it is an installed one (one built here is installed
# into the same prefix, where the config looks first).
set(TernaryCounter_KOKKOS_DIR_HINT "")
if(NOT TernaryCounter_KOKKOS_BUILT_IN_TREE AND Kokkos_DIR)
  set(TernaryCounter_KOKKOS_DIR_HINT "${Kokkos_DIR}")
endif()
configure_package_config_file(
  ${CMAKE_CURRENT_LIST_DIR}/TernaryCounterConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/TernaryCounterConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/TernaryCounter)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/TernaryCounterConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/TernaryCounterConfig.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/TernaryCounterConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/TernaryCounter)
install(FILES ${PROJECT_SOURCE_DIR}/LICENSE DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/TernaryCounter)

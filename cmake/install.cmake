# Installs pmlab as a package: the layer libraries as exported targets (find_package(pmlab)),
# the headers, the CLI, pmlabConfig.cmake + version file and pmlab.pc.
include(CMakePackageConfigHelpers)

# The targets users name. pmlab::lp is what protecting a loop needs: the LP headers (regions,
# checksum table, recovery driver), the pool and the backends; their few compiled functions live
# in the base layer, so it is an interface target over pmlab_base. pmlab::pmlab is everything.
# Every exported target requires C++20 itself (pmlab's headers use concepts), so a project that
# sets no standard still compiles them as C++20 (scripts/check-examples builds examples/heat so).
target_compile_features(pmlab_base PUBLIC cxx_std_20)
add_library(pmlab_lp INTERFACE)
target_link_libraries(pmlab_lp INTERFACE pmlab_base)
add_library(pmlab::lp ALIAS pmlab_lp)
add_library(pmlab_all INTERFACE)
target_link_libraries(pmlab_all INTERFACE pmlab_experiments)
add_library(pmlab::pmlab ALIAS pmlab_all)

set_target_properties(pmlab_base PROPERTIES EXPORT_NAME base)
set_target_properties(pmlab_sim PROPERTIES EXPORT_NAME sim)
set_target_properties(pmlab_run PROPERTIES EXPORT_NAME run)
set_target_properties(pmlab_experiments PROPERTIES EXPORT_NAME experiments)
set_target_properties(pmlab_lp PROPERTIES EXPORT_NAME lp)
set_target_properties(pmlab_all PROPERTIES EXPORT_NAME pmlab)

set(PMLAB_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/pmlab)

install(TARGETS pmlab_base pmlab_sim pmlab_run pmlab_experiments pmlab_lp pmlab_all
        EXPORT pmlabTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS pmlab RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# The C++ headers, the C API (pmlab.h) and the Fortran binding's source (pmlab.f90).
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/pmlab DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        FILES_MATCHING PATTERN "*.hpp" PATTERN "*.h" PATTERN "*.f90")
install(EXPORT pmlabTargets NAMESPACE pmlab:: DESTINATION ${PMLAB_CMAKE_DIR})

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/pmlabConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/pmlabConfig.cmake
                              INSTALL_DESTINATION ${PMLAB_CMAKE_DIR})
# 0.x releases promise nothing across minor versions.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/pmlabConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/pmlabConfig.cmake ${PROJECT_BINARY_DIR}/pmlabConfigVersion.cmake
        DESTINATION ${PMLAB_CMAKE_DIR})

# pkg-config: the static libraries in link order, the public dependencies as Requires. pmlab-lp
# is what pmlab::lp links (the base layer alone: no simulator, no Boost.Context).
file(RELATIVE_PATH PMLAB_PC_UP /p/${CMAKE_INSTALL_LIBDIR}/pkgconfig /p)
configure_file(${PROJECT_SOURCE_DIR}/cmake/pmlab.pc.in ${PROJECT_BINARY_DIR}/pmlab.pc @ONLY)
configure_file(${PROJECT_SOURCE_DIR}/cmake/pmlab-lp.pc.in ${PROJECT_BINARY_DIR}/pmlab-lp.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/pmlab.pc ${PROJECT_BINARY_DIR}/pmlab-lp.pc
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
install(FILES ${PROJECT_SOURCE_DIR}/LICENSE ${PROJECT_SOURCE_DIR}/CITATION.cff
        DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/pmlab)
# The presets as machine files, to copy and edit (pmlab sim --config FILE.json; docs/cli.md).
install(DIRECTORY ${PROJECT_SOURCE_DIR}/configs/ DESTINATION ${CMAKE_INSTALL_DATADIR}/pmlab/configs
        FILES_MATCHING PATTERN "*.json")

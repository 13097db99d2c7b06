# pmlab-mpi, the distributed run (docs/distributed.md): built only where MPI is found
# (libopenmpi-dev), so pmlab itself never needs MPI. Its tests go with it (tests/mpi/).
find_package(MPI COMPONENTS CXX QUIET)
if(MPI_CXX_FOUND)
  file(GLOB PMLAB_MPI_SOURCES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/mpi/*.cpp)
  add_executable(pmlab-mpi ${PMLAB_MPI_SOURCES})
  target_link_libraries(pmlab-mpi PRIVATE pmlab::run MPI::MPI_CXX CLI11::CLI11)
  install(TARGETS pmlab-mpi RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  set(PMLAB_HAVE_MPI ON)
else()
  message(STATUS "MPI not found: pmlab-mpi and its tests are skipped (install libopenmpi-dev)")
  set(PMLAB_HAVE_MPI OFF)
endif()

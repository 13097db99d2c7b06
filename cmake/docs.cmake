# API reference with Doxygen (`make docs` / the `docs` target, installed under share/doc/pmlab/api
# when built): every public header, plus a strict pass over the headers a user needs to protect a
# loop, where any warning (an undocumented member, a malformed command) fails the build.
find_package(Doxygen QUIET)
if(DOXYGEN_FOUND)
  set(PMLAB_DOXYGEN_OUT ${PROJECT_BINARY_DIR}/docs)
  # The user-facing API: every member documented, warnings are errors.
  set(PMLAB_DOXYGEN_STRICT_INPUT
      "${PROJECT_SOURCE_DIR}/include/pmlab/lp ${PROJECT_SOURCE_DIR}/include/pmlab/run/user_kernel.hpp ${PROJECT_SOURCE_DIR}/include/pmlab/pool/user_params.hpp ${PROJECT_SOURCE_DIR}/include/pmlab/pool/run_states.hpp ${PROJECT_SOURCE_DIR}/include/pmlab/persist/choice.hpp ${PROJECT_SOURCE_DIR}/include/pmlab/pmlab.h")
  configure_file(${PROJECT_SOURCE_DIR}/Doxyfile ${PROJECT_BINARY_DIR}/Doxyfile COPYONLY)
  add_custom_target(docs
    COMMAND ${CMAKE_COMMAND} -E make_directory ${PMLAB_DOXYGEN_OUT}
    COMMAND ${CMAKE_COMMAND} -E env PMLAB_DOXY_INPUT=${PMLAB_DOXYGEN_STRICT_INPUT}
            PMLAB_DOXY_OUT=${PMLAB_DOXYGEN_OUT}/strict PMLAB_DOXY_EXTRACT_ALL=NO
            ${DOXYGEN_EXECUTABLE} ${PROJECT_BINARY_DIR}/Doxyfile
    COMMAND ${CMAKE_COMMAND} -E env "PMLAB_DOXY_INPUT=${PROJECT_SOURCE_DIR}/include/pmlab"
            PMLAB_DOXY_OUT=${PMLAB_DOXYGEN_OUT} PMLAB_DOXY_EXTRACT_ALL=YES
            ${DOXYGEN_EXECUTABLE} ${PROJECT_BINARY_DIR}/Doxyfile
    COMMENT "API reference: ${PMLAB_DOXYGEN_OUT}/html/index.html"
    VERBATIM)
  # Installed when built (`make docs` before `cmake --install`); an install without it skips it.
  install(DIRECTORY ${PMLAB_DOXYGEN_OUT}/html/ DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/pmlab/api
          OPTIONAL)
else()
  add_custom_target(docs
    COMMAND ${CMAKE_COMMAND} -E echo "docs: doxygen not found (scripts/setup-deps installs it)"
    COMMAND ${CMAKE_COMMAND} -E false
    VERBATIM)
endif()

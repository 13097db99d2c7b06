# pmlab(1): the man page, generated at build time from pmlab's --help and installed in man1.
# scripts/man-page renders every verb's help (help2man, when installed, writes the page around
# it); generated rather than written, so that the page cannot drift from the help.
find_program(PMLAB_PYTHON3 python3)
find_program(PMLAB_HELP2MAN help2man)
if(NOT PMLAB_PYTHON3)
  message(STATUS "pmlab(1): python3 not found, no man page (scripts/setup-deps installs it)")
  return()
endif()
set(PMLAB_MAN_PAGE ${PROJECT_BINARY_DIR}/man/pmlab.1)
set(PMLAB_MAN_HELP2MAN)
if(PMLAB_HELP2MAN)
  set(PMLAB_MAN_HELP2MAN --help2man ${PMLAB_HELP2MAN})
endif()
add_custom_command(
  OUTPUT ${PMLAB_MAN_PAGE}
  COMMAND ${PMLAB_PYTHON3} ${PROJECT_SOURCE_DIR}/scripts/man-page --pmlab $<TARGET_FILE:pmlab>
          --out ${PMLAB_MAN_PAGE} --version ${PROJECT_VERSION}
          --doc-dir ${CMAKE_INSTALL_FULL_DATADIR}/doc/pmlab ${PMLAB_MAN_HELP2MAN}
  DEPENDS pmlab ${PROJECT_SOURCE_DIR}/scripts/man-page
  COMMENT "pmlab(1) from pmlab --help: ${PMLAB_MAN_PAGE}"
  VERBATIM)
add_custom_target(pmlab_man ALL DEPENDS ${PMLAB_MAN_PAGE})
install(FILES ${PMLAB_MAN_PAGE} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)

# The git revision compiled into `--json` metadata (src/cli/build_info.cpp). Configure re-runs
# when HEAD or its branch moves, so the revision follows commits; "-dirty" marks local edits
# present at configure time.
find_package(Git QUIET)
set(PMLAB_GIT_REVISION "unknown")
if(GIT_FOUND)
  execute_process(COMMAND ${GIT_EXECUTABLE} rev-parse --short=12 HEAD
                  WORKING_DIRECTORY ${PROJECT_SOURCE_DIR} OUTPUT_VARIABLE rev
                  OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE rc)
  if(rc EQUAL 0)
    execute_process(COMMAND ${GIT_EXECUTABLE} status --porcelain --untracked-files=no
                    WORKING_DIRECTORY ${PROJECT_SOURCE_DIR} OUTPUT_VARIABLE dirty ERROR_QUIET)
    set(PMLAB_GIT_REVISION "${rev}")
    if(dirty)
      string(APPEND PMLAB_GIT_REVISION "-dirty")
    endif()
    foreach(what HEAD refs/heads)
      execute_process(COMMAND ${GIT_EXECUTABLE} rev-parse --path-format=absolute --git-path ${what}
                      WORKING_DIRECTORY ${PROJECT_SOURCE_DIR} OUTPUT_VARIABLE p
                      OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
      if(p AND EXISTS "${p}")
        set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${p}")
      endif()
    endforeach()
  endif()
endif()
set_source_files_properties(${PROJECT_SOURCE_DIR}/src/cli/build_info.cpp PROPERTIES
                            COMPILE_DEFINITIONS "PMLAB_GIT_REVISION=\"${PMLAB_GIT_REVISION}\""
                            # Its own object: a new commit must not recompile a unity batch.
                            SKIP_UNITY_BUILD_INCLUSION ON)

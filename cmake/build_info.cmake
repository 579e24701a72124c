# Writes OUT (build_info.cpp) with the commit SOURCE_DIR's tree is at, at
# every build rather than once at configure time: a tree that moved on
# without a reconfigure (git pull; make) would otherwise name an old commit
# in every record. "-dirty" marks changes to tracked files not committed.
# configure_file rewrites OUT only when its text changes, so an unchanged
# commit rebuilds nothing.
execute_process(COMMAND git rev-parse --short HEAD WORKING_DIRECTORY ${SOURCE_DIR}
  OUTPUT_VARIABLE SHOAL_COMMIT OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE failed ERROR_QUIET)
if(failed OR NOT SHOAL_COMMIT)
  set(SHOAL_COMMIT unknown)  # not a git checkout (a tarball)
else()
  execute_process(COMMAND git status --porcelain --untracked-files=no WORKING_DIRECTORY ${SOURCE_DIR}
    OUTPUT_VARIABLE changes OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(changes)
    string(APPEND SHOAL_COMMIT "-dirty")
  endif()
endif()
configure_file(${SOURCE_DIR}/lib/core/build_info.cpp.in ${OUT} @ONLY)

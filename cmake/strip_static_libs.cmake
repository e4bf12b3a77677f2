# CPack pre-build script: strips debug information from the static libraries
# in the staging tree before they are packaged, as Debian's dh_strip does
# (--strip-debug keeps the symbols a static library must keep). CPack's own
# CPACK_STRIP_FILES strips executables only; a RelWithDebInfo libredbloom.a
# is about 30 MB of it line tables.
find_program(REDBLOOM_STRIP NAMES strip REQUIRED)
file(GLOB_RECURSE archives "${CPACK_TEMPORARY_DIRECTORY}/*.a")
foreach(archive IN LISTS archives)
  execute_process(COMMAND ${REDBLOOM_STRIP} --strip-debug --enable-deterministic-archives
                          "${archive}"
                  RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "strip --strip-debug ${archive} failed (${rc})")
  endif()
endforeach()

# Bulk load, import/export and merge. The Guava part runs real Java (the JDK
# and jar were found by interop.cmake, which is included first).
set(REDBLOOM_GUAVA_FILES_CLASSDIR ${CMAKE_CURRENT_BINARY_DIR}/java-guava-files)
add_custom_command(
  OUTPUT ${REDBLOOM_GUAVA_FILES_CLASSDIR}/GuavaFiles.class
  COMMAND ${CMAKE_COMMAND} -E make_directory ${REDBLOOM_GUAVA_FILES_CLASSDIR}
  COMMAND ${Java_JAVAC_EXECUTABLE} -encoding UTF-8 -Xlint:all,-classfile -Werror
          -cp ${REDBLOOM_GUAVA_JAR} -d ${REDBLOOM_GUAVA_FILES_CLASSDIR}
          ${CMAKE_CURRENT_SOURCE_DIR}/java/GuavaFiles.java
  DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/java/GuavaFiles.java ${REDBLOOM_GUAVA_JAR}
  COMMENT "Compiling the Guava file helper against ${REDBLOOM_GUAVA_JAR}"
  VERBATIM)
add_custom_target(redbloom_guava_files DEPENDS ${REDBLOOM_GUAVA_FILES_CLASSDIR}/GuavaFiles.class)

redbloom_add_test(bulk_test bulk_test.cc
  LABELS bulk COST 50
  LIBS ZLIB::ZLIB nlohmann_json::nlohmann_json
  DEFS GUAVA_JAR="${REDBLOOM_GUAVA_JAR}" JAVA="${Java_JAVA_EXECUTABLE}"
       GUAVA_FILES_CLASSDIR="${REDBLOOM_GUAVA_FILES_CLASSDIR}")
add_dependencies(bulk_test redbloom_guava_files)

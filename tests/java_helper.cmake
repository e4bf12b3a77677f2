# The blog posts' BloomFilterHelper (tests/java/BloomFilterHelper.java), the
# reference of the `seed` strategy: compiled once, then on the class path of
# both Java programs that use it (GuavaOracle for interop_test, SeedRedis for
# redis_java_test).
include_guard(GLOBAL)
set(REDBLOOM_HELPER_CLASSDIR ${CMAKE_CURRENT_BINARY_DIR}/java-helper)
add_custom_command(
  OUTPUT ${REDBLOOM_HELPER_CLASSDIR}/BloomFilterHelper.class
  COMMAND ${CMAKE_COMMAND} -E make_directory ${REDBLOOM_HELPER_CLASSDIR}
  COMMAND ${Java_JAVAC_EXECUTABLE} -encoding UTF-8 -Xlint:all,-classfile -Werror
          -cp ${REDBLOOM_GUAVA_JAR} -d ${REDBLOOM_HELPER_CLASSDIR}
          ${CMAKE_CURRENT_SOURCE_DIR}/java/BloomFilterHelper.java
  DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/java/BloomFilterHelper.java ${REDBLOOM_GUAVA_JAR}
  COMMENT "Compiling the blog posts' BloomFilterHelper against ${REDBLOOM_GUAVA_JAR}"
  VERBATIM)
add_custom_target(redbloom_java_helper
  DEPENDS ${REDBLOOM_HELPER_CLASSDIR}/BloomFilterHelper.class)

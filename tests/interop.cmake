# Java interop: interop_test compares redbloom with Debian's Guava 31.1
# (libguava-java) and with the blog posts' BloomFilterHelper, by running the
# Java program tests/java/GuavaOracle.java inside the test. No Java, no test:
# configuring fails with the package to install rather than skipping quietly.
set(REDBLOOM_GUAVA_JAR /usr/share/java/guava.jar CACHE FILEPATH
    "Guava jar the Java interop test runs against (Debian: libguava-java)")

find_package(Java 17 COMPONENTS Development Runtime)
if(NOT Java_JAVAC_EXECUTABLE OR NOT Java_JAVA_EXECUTABLE)
  message(FATAL_ERROR
    "The Java interop test needs javac and java 17 or newer: "
    "apt-get install openjdk-17-jdk-headless (or configure with -DREDBLOOM_BUILD_TESTS=OFF).")
endif()
if(NOT EXISTS "${REDBLOOM_GUAVA_JAR}")
  message(FATAL_ERROR
    "The Java interop test needs Guava at ${REDBLOOM_GUAVA_JAR}: apt-get install libguava-java "
    "(or pass -DREDBLOOM_GUAVA_JAR=/path/to/guava.jar).")
endif()

include(${CMAKE_CURRENT_SOURCE_DIR}/java_helper.cmake)
set(REDBLOOM_ORACLE_CLASSDIR ${CMAKE_CURRENT_BINARY_DIR}/java-oracle)
# -Xlint:-classfile: Guava's class files name errorprone annotations that are
# not on the class path; everything else is a warning, and warnings fail.
add_custom_command(
  OUTPUT ${REDBLOOM_ORACLE_CLASSDIR}/GuavaOracle.class
  COMMAND ${CMAKE_COMMAND} -E make_directory ${REDBLOOM_ORACLE_CLASSDIR}
  COMMAND ${Java_JAVAC_EXECUTABLE} -encoding UTF-8 -Xlint:all,-classfile -Werror
          -cp ${REDBLOOM_GUAVA_JAR}:${REDBLOOM_HELPER_CLASSDIR} -d ${REDBLOOM_ORACLE_CLASSDIR}
          ${CMAKE_CURRENT_SOURCE_DIR}/java/GuavaOracle.java
  DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/java/GuavaOracle.java ${REDBLOOM_GUAVA_JAR}
          ${REDBLOOM_HELPER_CLASSDIR}/BloomFilterHelper.class
  COMMENT "Compiling the Java interop oracle against ${REDBLOOM_GUAVA_JAR}"
  VERBATIM)
add_custom_target(redbloom_guava_oracle DEPENDS ${REDBLOOM_ORACLE_CLASSDIR}/GuavaOracle.class)
add_dependencies(redbloom_guava_oracle redbloom_java_helper)

redbloom_add_test(interop_test interop_test.cc
  LABELS interop
  DEFS GUAVA_JAR="${REDBLOOM_GUAVA_JAR}" JAVA="${Java_JAVA_EXECUTABLE}"
       ORACLE_CLASSPATH="${REDBLOOM_ORACLE_CLASSDIR}:${REDBLOOM_HELPER_CLASSDIR}")
add_dependencies(interop_test redbloom_guava_oracle)

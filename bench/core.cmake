# Core in-memory benchmark (issue #2). scripts/bench-core.sh builds it in a
# Release tree, runs it next to bench/java/GuavaBench.java and prints the
# comparison; core_bench refuses to run from an unoptimised build.
add_executable(core_bench core_bench.cc)
target_link_libraries(core_bench PRIVATE redbloom::redbloom benchmark::benchmark redbloom_warnings)

# The Java side is compiled with the build when a JDK and Guava are present,
# so it cannot rot unnoticed; the script compiles it itself otherwise.
find_package(Java 17 COMPONENTS Development QUIET)
set(REDBLOOM_BENCH_GUAVA_JAR /usr/share/java/guava.jar CACHE FILEPATH
    "Guava jar for bench/java/GuavaBench.java")
if(Java_JAVAC_EXECUTABLE AND EXISTS "${REDBLOOM_BENCH_GUAVA_JAR}")
  set(_guava_bench_dir ${CMAKE_CURRENT_BINARY_DIR}/java)
  add_custom_command(
    OUTPUT ${_guava_bench_dir}/GuavaBench.class
    COMMAND ${CMAKE_COMMAND} -E make_directory ${_guava_bench_dir}
    COMMAND ${Java_JAVAC_EXECUTABLE} -encoding UTF-8 -Xlint:all,-classfile -Werror
            -cp ${REDBLOOM_BENCH_GUAVA_JAR} -d ${_guava_bench_dir}
            ${CMAKE_CURRENT_SOURCE_DIR}/java/GuavaBench.java
    DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/java/GuavaBench.java
    COMMENT "Compiling the Guava benchmark"
    VERBATIM)
  add_custom_target(guava_bench ALL DEPENDS ${_guava_bench_dir}/GuavaBench.class)
endif()

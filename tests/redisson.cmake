# Redisson interop (strategy redisson): the reference vectors in
# tests/data/redisson, Redisson's arithmetic on a real JVM
# (tests/java/RedissonMath.java), and a real redis-server on which a test
# replays what a Redisson client sends. Redisson itself is not in Debian, so
# its scripts are restated in the test; no JVM, no test (configure fails).
find_package(nlohmann_json REQUIRED)
find_package(Java 17 COMPONENTS Development Runtime)
if(NOT Java_JAVAC_EXECUTABLE OR NOT Java_JAVA_EXECUTABLE)
  message(FATAL_ERROR "The Redisson tests need javac and java 17 or newer: "
                      "apt-get install openjdk-17-jdk-headless")
endif()
set(REDBLOOM_REDISSON_MATH_CLASSDIR ${CMAKE_CURRENT_BINARY_DIR}/java-redisson-math)
add_custom_command(
  OUTPUT ${REDBLOOM_REDISSON_MATH_CLASSDIR}/RedissonMath.class
  COMMAND ${CMAKE_COMMAND} -E make_directory ${REDBLOOM_REDISSON_MATH_CLASSDIR}
  COMMAND ${Java_JAVAC_EXECUTABLE} -encoding UTF-8 -Xlint:all -Werror
          -d ${REDBLOOM_REDISSON_MATH_CLASSDIR} ${CMAKE_CURRENT_SOURCE_DIR}/java/RedissonMath.java
  DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/java/RedissonMath.java
  COMMENT "Compiling Redisson's arithmetic (RedissonMath)"
  VERBATIM)
add_custom_target(redbloom_redisson_math
                  DEPENDS ${REDBLOOM_REDISSON_MATH_CLASSDIR}/RedissonMath.class)

if(TARGET redbloom_cli)
  redbloom_add_test(redisson_test redisson_test.cc
    LABELS "core;interop"
    LIBS nlohmann_json::nlohmann_json
    DEFS JAVA="${Java_JAVA_EXECUTABLE}" REDISSON_MATH_CLASSDIR="${REDBLOOM_REDISSON_MATH_CLASSDIR}")
  add_dependencies(redisson_test redbloom_redisson_math)
endif()
if(TARGET redbloom_cli)
  redbloom_add_test(redisson_redis_test redisson_redis_test.cc
    LABELS "redis;interop"
    LIBS PkgConfig::HIREDIS nlohmann_json::nlohmann_json)
endif()

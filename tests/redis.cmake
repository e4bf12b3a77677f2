# Redis store tests. Each starts its own redis-server on a free loopback port
# (tests/redis_server.h); a missing redis-server fails them, it never skips.
# Java interop needs the JDK and Guava jar that interop.cmake found.
set(_redis_libs PkgConfig::HIREDIS)
redbloom_add_test(redis_store_test redis_store_test.cc LABELS redis LIBS ${_redis_libs} COST 48)
redbloom_add_test(redis_restart_test redis_restart_test.cc LABELS "redis;fault")
# The client's parts that need no server: reply parsers on RESP bytes, fan-out.
redbloom_add_test(redis_client_unit_test redis_client_unit_test.cc LABELS redis LIBS ${_redis_libs})
# The harness itself: servers of a test binary that dies are killed.
redbloom_add_test(harness_test harness_test.cc LABELS redis)

find_package(Java 17 COMPONENTS Development Runtime)
if(NOT Java_JAVAC_EXECUTABLE OR NOT Java_JAVA_EXECUTABLE)
  message(FATAL_ERROR "The Redis interop test needs javac and java 17 or newer: "
                      "apt-get install openjdk-17-jdk-headless")
endif()
if(NOT DEFINED REDBLOOM_GUAVA_JAR)
  set(REDBLOOM_GUAVA_JAR /usr/share/java/guava.jar)
endif()
include(${CMAKE_CURRENT_SOURCE_DIR}/java_helper.cmake)
set(REDBLOOM_SEED_REDIS_CLASSDIR ${CMAKE_CURRENT_BINARY_DIR}/java-seed-redis)
add_custom_command(
  OUTPUT ${REDBLOOM_SEED_REDIS_CLASSDIR}/SeedRedis.class
  COMMAND ${CMAKE_COMMAND} -E make_directory ${REDBLOOM_SEED_REDIS_CLASSDIR}
  COMMAND ${Java_JAVAC_EXECUTABLE} -encoding UTF-8 -Xlint:all,-classfile -Werror
          -cp ${REDBLOOM_GUAVA_JAR}:${REDBLOOM_HELPER_CLASSDIR} -d ${REDBLOOM_SEED_REDIS_CLASSDIR}
          ${CMAKE_CURRENT_SOURCE_DIR}/java/SeedRedis.java
  DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/java/SeedRedis.java ${REDBLOOM_GUAVA_JAR}
          ${REDBLOOM_HELPER_CLASSDIR}/BloomFilterHelper.class
  COMMENT "Compiling the Java seed service (SeedRedis) against ${REDBLOOM_GUAVA_JAR}"
  VERBATIM)
add_custom_target(redbloom_seed_redis DEPENDS ${REDBLOOM_SEED_REDIS_CLASSDIR}/SeedRedis.class)
add_dependencies(redbloom_seed_redis redbloom_java_helper)
redbloom_add_test(redis_java_test redis_java_test.cc
  LABELS redis interop
  LIBS ${_redis_libs}
  DEFS GUAVA_JAR="${REDBLOOM_GUAVA_JAR}" JAVA="${Java_JAVA_EXECUTABLE}"
       SEED_REDIS_CLASSPATH="${REDBLOOM_SEED_REDIS_CLASSDIR}:${REDBLOOM_HELPER_CLASSDIR}")
add_dependencies(redis_java_test redbloom_seed_redis)

if(TARGET redbloom_cli)
  redbloom_add_test(redis_cli_test redis_cli_test.cc LABELS redis
                    LIBS nlohmann_json::nlohmann_json)
  redbloom_add_test(redis_acl_test redis_acl_test.cc LABELS redis COST 70)
endif()

# Redis Cluster: a real 3-master, 3-replica cluster started by the test.
redbloom_add_test(redis_cluster_test redis_cluster_test.cc LABELS "redis;cluster;fault" COST 22)

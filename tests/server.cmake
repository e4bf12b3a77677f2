# redbloomd tests: unit tests of its pieces, and end-to-end tests that start
# the real binary on a loopback port (on the file store and on a real
# redis-server that the test starts).
if(TARGET redbloomd)
  add_library(redbloom_server_test_util STATIC server_process.cc)
  target_link_libraries(redbloom_server_test_util
    PUBLIC redbloom_test_util redbloomd_core PRIVATE redbloom_warnings)
  target_compile_definitions(redbloom_server_test_util
    PUBLIC REDBLOOMD_PATH="$<TARGET_FILE:redbloomd>")

  redbloom_add_test(server_unit_test server_unit_test.cc LIBS redbloomd_core LABELS server)
  foreach(t server_api_test server_lifecycle_test server_redis_test)
    if(EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/${t}.cc)
      redbloom_add_test(${t} ${t}.cc LIBS redbloom_server_test_util LABELS server)
      add_dependencies(${t} redbloomd)
    endif()
  endforeach()
  if(TARGET server_redis_test)
    set_tests_properties(server_redis_test PROPERTIES LABELS "server;redis")
  endif()
endif()

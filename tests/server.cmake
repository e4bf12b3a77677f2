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
  redbloom_add_test(request_head_test request_head_test.cc LIBS redbloomd_core LABELS server)
  foreach(t server_api_test server_lifecycle_test server_limits_test server_redis_test)
    if(EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/${t}.cc)
      redbloom_add_test(${t} ${t}.cc LIBS redbloom_server_test_util LABELS server)
      add_dependencies(${t} redbloomd)
    endif()
  endforeach()
  # Fails chosen msyncs (tests/fault_sync.cc, built with the CLI's tests).
  if(TARGET redbloom_fault_sync AND TARGET server_lifecycle_test)
    target_compile_definitions(server_lifecycle_test PRIVATE
      REDBLOOM_FAULT_SYNC_PATH="$<TARGET_FILE:redbloom_fault_sync>")
    add_dependencies(server_lifecycle_test redbloom_fault_sync)
  endif()
  # The file store on a full and on a read-only file system: mounts tmpfs
  # (needs root), and runs the CLI and redbloomd on it.
  redbloom_add_test(file_disk_test file_disk_test.cc LIBS redbloom_server_test_util LABELS core)
  add_dependencies(file_disk_test redbloomd)
  # docs/openapi.json against the real server. tests/openapi_check.py validates
  # with Debian's python3-jsonschema, so prefer Debian's python3 over one
  # earlier on PATH (pyenv) that lacks the module.
  find_program(REDBLOOM_PYTHON3 python3 PATHS /usr/bin NO_DEFAULT_PATH)
  find_program(REDBLOOM_PYTHON3 python3 REQUIRED)
  redbloom_add_test(server_openapi_test server_openapi_test.cc LIBS redbloom_server_test_util
                    LABELS server DEFS REDBLOOM_PYTHON3="${REDBLOOM_PYTHON3}")
  add_dependencies(server_openapi_test redbloomd)
  if(TARGET server_redis_test)
    set_tests_properties(server_redis_test PROPERTIES LABELS "server;redis")
  endif()
endif()

# Core library and CLI tests: no server or JVM needed.
redbloom_add_test(status_test status_test.cc LABELS core)
redbloom_add_test(util_test util_test.cc LABELS core)
redbloom_add_test(hash_test hash_test.cc LABELS core)
redbloom_add_test(sizing_test sizing_test.cc LABELS core)
# JavaLog against libquadmath's logq where GCC has it; CI's second pass
# (scripts/test.sh) builds this test with clang, which has no quadmath here,
# and its checksum of the sizings must be GCC's.
if(REDBLOOM_HAVE_QUADMATH)
  redbloom_add_test(java_log_test java_log_test.cc LABELS core LIBS quadmath
                    DEFS REDBLOOM_HAVE_QUADMATH=1)
else()
  redbloom_add_test(java_log_test java_log_test.cc LABELS core)
endif()
redbloom_add_test(strategy_test strategy_test.cc LABELS core)
redbloom_add_test(funnel_test funnel_test.cc LABELS core)
redbloom_add_test(store_test store_test.cc LABELS "core;redis")
redbloom_add_test(file_store_test file_store_test.cc LABELS core LIBS ZLIB::ZLIB)
redbloom_add_test(bloom_filter_test bloom_filter_test.cc LABELS core COST 19)
redbloom_add_test(info_sample_test info_sample_test.cc LABELS core)
if(TARGET redbloom_cli)
  redbloom_add_test(cli_test cli_test.cc ${PROJECT_SOURCE_DIR}/tools/exit_codes.cc
                    LABELS core LIBS nlohmann_json::nlohmann_json COST 40)
  target_include_directories(cli_test PRIVATE ${PROJECT_SOURCE_DIR}/tools)
  # Fails chosen syncs, preloaded into the CLI (tests/fault_sync.cc).
  add_library(redbloom_fault_sync MODULE fault_sync.cc)
  target_link_libraries(redbloom_fault_sync PRIVATE ${CMAKE_DL_LIBS})
  target_compile_definitions(cli_test PRIVATE
    REDBLOOM_FAULT_SYNC_PATH="$<TARGET_FILE:redbloom_fault_sync>")
  add_dependencies(cli_test redbloom_fault_sync)
endif()
redbloom_add_test(block_strategy_test block_strategy_test.cc LABELS core)
redbloom_add_test(hot_path_test hot_path_test.cc LABELS core)

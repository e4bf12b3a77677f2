# The library side of scripts/bench-server.sh (wrk against redbloomd): the
# same batches through BloomFilter and through the service's handler without
# HTTP, for the overhead ratio.
if(TARGET redbloomd_core)
  add_executable(server_bench server_bench.cc)
  target_link_libraries(server_bench PRIVATE redbloomd_core CLI11::CLI11 redbloom_warnings)
endif()

# Bulk-load benchmark (issue #5). scripts/bench-bulk.sh builds it in a Release
# tree, starts redis-server (and RedisBloom if $REDISBLOOM_MODULE is set) and
# runs it.
add_executable(bulk_bench bulk_bench.cc)
# tests/ for raw_redis.h, the one raw Redis client of tests and benchmarks.
target_include_directories(bulk_bench PRIVATE ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/tests)
target_link_libraries(bulk_bench PRIVATE redbloom::redbloom PkgConfig::HIREDIS CLI11::CLI11 redbloom_warnings)

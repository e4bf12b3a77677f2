# Redis benchmark (issue #3). scripts/bench-redis.sh builds it in a Release
# tree, starts redis-server (and RedisBloom if $REDISBLOOM_MODULE is set) and
# runs it; it does not compile unoptimised.
add_executable(redis_bench redis_bench.cc)
# tests/ for redisson_replay.h: the Redisson client's scripts, shared with the tests.
target_include_directories(redis_bench PRIVATE ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/tests)
target_link_libraries(redis_bench PRIVATE redbloom::redbloom PkgConfig::HIREDIS CLI11::CLI11 redbloom_warnings)

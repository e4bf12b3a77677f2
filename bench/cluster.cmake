# Redis Cluster benchmark (issue #12). scripts/bench-cluster.sh builds it in a
# Release tree, starts one redis-server and a Redis Cluster, and runs it.
add_executable(cluster_bench cluster_bench.cc)
target_include_directories(cluster_bench PRIVATE ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/tests)
target_link_libraries(cluster_bench PRIVATE redbloom::redbloom PkgConfig::HIREDIS CLI11::CLI11 redbloom_warnings)

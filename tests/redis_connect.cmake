# Production Redis connections: TLS (rediss://) and Sentinel
# (redis-sentinel://), against real redis-servers and sentinels the tests
# start. The TLS tests make their CA and certificates with openssl at run time.
find_program(REDBLOOM_OPENSSL openssl)
if(NOT REDBLOOM_OPENSSL)
  message(FATAL_ERROR "The TLS tests need the openssl command: apt-get install openssl")
endif()
# With the service built, both also run redbloomd on these URLs.
if(TARGET redbloom_server_test_util)
  redbloom_add_test(redis_tls_test redis_tls_test.cc tls_certs.cc LABELS redis
                    LIBS PkgConfig::HIREDIS redbloom_server_test_util)
  add_dependencies(redis_tls_test redbloomd)
else()
  redbloom_add_test(redis_tls_test redis_tls_test.cc tls_certs.cc LABELS redis
                    LIBS PkgConfig::HIREDIS)
endif()
# Sentinel: each test starts a master, a replica and a sentinel, and the
# failover tests take a few seconds each.
if(TARGET redbloom_server_test_util)
  redbloom_add_test(redis_sentinel_test redis_sentinel_test.cc redis_sentinel.cc tls_certs.cc
                    LABELS "redis;fault" LIBS redbloom_server_test_util COST 20)
  if(TARGET redis_sentinel_test)
    add_dependencies(redis_sentinel_test redbloomd)
  endif()
else()
  redbloom_add_test(redis_sentinel_test redis_sentinel_test.cc redis_sentinel.cc tls_certs.cc
                    LABELS "redis;fault" COST 20)
endif()

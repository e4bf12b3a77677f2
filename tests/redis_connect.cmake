# Production Redis connections: TLS (rediss://) and Sentinel
# (redis-sentinel://), against real redis-servers and sentinels the tests
# start. The TLS tests make their CA and certificates with openssl at run time.
find_program(REDBLOOM_OPENSSL openssl)
if(NOT REDBLOOM_OPENSSL)
  message(FATAL_ERROR "The TLS tests need the openssl command: apt-get install openssl")
endif()
redbloom_add_test(redis_tls_test redis_tls_test.cc tls_certs.cc LABELS redis LIBS PkgConfig::HIREDIS)

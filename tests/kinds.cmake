# Counting, scaling, window and TTL filters, and rebuilds, on every store
# (a real redis-server is started by the test).
redbloom_add_test(kinds_test kinds_test.cc LABELS kinds COST 62 LIBS ZLIB::ZLIB)

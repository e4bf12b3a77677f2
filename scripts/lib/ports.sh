# free_port: print a loopback port nothing listens on, for a server to bind.
# Source it from the repository root (scripts/lib/bench.sh does).

# bash's /dev/tcp connects if something listens there. Ports come from below
# the kernel's ephemeral range, where an outgoing connection's local port
# (which no connect can see) may hold the port a server then fails to bind.
free_port() {
  local port low
  read -r low _ </proc/sys/net/ipv4/ip_local_port_range
  [ "$low" -gt 11000 ] || low=32768
  while :; do
    port=$((10000 + RANDOM % (low - 10000)))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
      echo "$port"
      return
    fi
  done
}

#!/usr/bin/env python3
"""Seeds for fuzz/reply_fuzz: every key on a redis-server (127.0.0.1:PORT),
read the way redbloom's stores read them (HGETALL, HMGET of a companion's
size and hashIterations, GETRANGE of a bitmap's first block), each reply
saved byte for byte behind the harness's flags byte.

Usage: capture_replies.py PORT OUT_DIR
"""
import hashlib
import socket
import sys

PONG = b"+PONG\r\n"


def main():
    port, out = int(sys.argv[1]), sys.argv[2]
    conn = socket.create_connection(("127.0.0.1", port))

    def call(*args):
        # One command and a PING behind it: the reply is everything before
        # the PONG.
        parts = [b"*%d\r\n" % len(args)]
        for arg in args:
            arg = arg.encode()
            parts.append(b"$%d\r\n%s\r\n" % (len(arg), arg))
        conn.sendall(b"".join(parts) + b"*1\r\n$4\r\nPING\r\n")
        data = b""
        while not data.endswith(PONG):
            chunk = conn.recv(65536)
            if not chunk:
                sys.exit("capture_replies: the server closed the connection")
            data += chunk
        return data[: -len(PONG)]

    def seed(flags, reply):
        name = hashlib.md5(reply).hexdigest()[:8]
        with open("%s/seed-%s" % (out, name), "wb") as f:
            f.write(bytes([flags]) + reply)

    keys = call("KEYS", "*").split(b"\r\n")[2::2]
    if not keys:
        sys.exit("capture_replies: the server holds no key")
    for key in (k.decode() for k in keys):
        kind = call("TYPE", key)
        if kind == b"+hash\r\n":
            seed(0, call("HGETALL", key))
            # 0x80: the harness checks companions of a redisson filter.
            seed(0x80 | 3, call("HMGET", key, "size", "hashIterations"))
        elif kind == b"+string\r\n":
            seed(1, call("GETRANGE", key, "0", "63"))
            seed(0, call("HGETALL", key))  # a WRONGTYPE error


if __name__ == "__main__":
    main()

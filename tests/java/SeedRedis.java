// The Java seed service, reduced to what touches Redis: the blog posts'
// BloomFilterHelper (BloomFilterHelper.java, verbatim) computes offsets, and a minimal RESP
// client sends one blocking SETBIT or GETBIT per offset, exactly as the
// posts' RedisService does through Spring's RedisTemplate:
//   redisTemplate.opsForValue().setBit(key, i, true)  ->  SETBIT key i 1
//   redisTemplate.opsForValue().getBit(key, i)        ->  GETBIT key i
// redbloom's tests run it against a real redis-server to prove that both
// sides read and write the same bits.
//
// Usage:
//   java -cp guava.jar:DIR SeedRedis PORT add   FUNNEL N P KEYS KEY < items
//   java -cp guava.jar:DIR SeedRedis PORT check FUNNEL N P KEYS KEY < items
//   java -cp guava.jar:DIR SeedRedis 0 jdkkey < names
// FUNNEL: utf8 (the Portuguese post: putString(s, UTF_8)) or utf8x2 (the
// Chinese post: putString twice). KEYS: plain (StringRedisTemplate: the key's
// UTF-8 bytes) or jdk (Spring's default RedisTemplate, whose
// JdkSerializationRedisSerializer sends ObjectOutputStream.writeObject(key)).
// Items and names are UTF-8 lines. check prints "1" or "0" per item; jdkkey
// prints the lower-case hex of each name's serialized bytes.
// Exit status: 0 ok, 2 bad usage, 3 Redis error.

import com.google.common.base.Charsets;
import com.google.common.hash.Funnel;
import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.ObjectOutputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

public final class SeedRedis {

  /** Just enough RESP to send SETBIT/GETBIT and read an integer reply. */
  static final class Resp implements AutoCloseable {
    private final Socket socket;
    private final OutputStream out;
    private final InputStream in;

    Resp(int port) throws IOException {
      socket = new Socket("127.0.0.1", port);
      socket.setTcpNoDelay(true);
      out = new BufferedOutputStream(socket.getOutputStream());
      in = new BufferedInputStream(socket.getInputStream());
    }

    /** Sends one command and waits for its reply: one round trip, like RedisTemplate. */
    long integerCommand(byte[]... args) throws IOException {
      out.write(('*' + Integer.toString(args.length) + "\r\n").getBytes(StandardCharsets.US_ASCII));
      for (byte[] a : args) {
        out.write(('$' + Integer.toString(a.length) + "\r\n").getBytes(StandardCharsets.US_ASCII));
        out.write(a);
        out.write("\r\n".getBytes(StandardCharsets.US_ASCII));
      }
      out.flush();
      String line = readLine();
      if (line.startsWith(":")) return Long.parseLong(line.substring(1));
      throw new IOException("redis answered: " + line);
    }

    private String readLine() throws IOException {
      ByteArrayOutputStream b = new ByteArrayOutputStream();
      int c;
      while ((c = in.read()) != -1) {
        if (c == '\r') {
          in.read();  // '\n'
          return b.toString(StandardCharsets.UTF_8);
        }
        b.write(c);
      }
      throw new IOException("redis closed the connection");
    }

    @Override
    public void close() throws IOException {
      socket.close();
    }
  }

  static Funnel<String> funnel(String name) {
    switch (name) {
      case "utf8":  // the Portuguese post
        return (from, into) -> into.putString(from, Charsets.UTF_8);
      case "utf8x2":  // the Chinese post
        return (Funnel<String>) (from, into) -> into.putString(from, Charsets.UTF_8)
            .putString(from, Charsets.UTF_8);
      default:
        throw new IllegalArgumentException("unknown funnel " + name);
    }
  }

  /** The key bytes Spring sends for a String key. */
  static byte[] keyBytes(String mode, String key) throws IOException {
    switch (mode) {
      case "plain":  // StringRedisTemplate: StringRedisSerializer, UTF-8
        return key.getBytes(StandardCharsets.UTF_8);
      case "jdk": {  // RedisTemplate's default JdkSerializationRedisSerializer
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (ObjectOutputStream oos = new ObjectOutputStream(bytes)) {
          oos.writeObject(key);
        }
        return bytes.toByteArray();
      }
      default:
        throw new IllegalArgumentException("unknown key mode " + mode);
    }
  }

  static List<String> readLines() throws IOException {
    BufferedReader r = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    List<String> lines = new ArrayList<>();
    for (String line; (line = r.readLine()) != null; ) lines.add(line);
    return lines;
  }

  static String hex(byte[] b) {
    final char[] digits = "0123456789abcdef".toCharArray();
    char[] out = new char[2 * b.length];
    for (int i = 0; i < b.length; i++) {
      out[2 * i] = digits[(b[i] >> 4) & 15];
      out[2 * i + 1] = digits[b[i] & 15];
    }
    return new String(out);
  }

  public static void main(String[] args) throws Exception {
    PrintStream out = new PrintStream(System.out, false, StandardCharsets.UTF_8);
    if (args.length == 2 && args[1].equals("jdkkey")) {
      for (String name : readLines()) out.println(hex(keyBytes("jdk", name)));
      out.flush();
      return;
    }
    if (args.length != 7) {
      System.err.println("usage: SeedRedis PORT add|check FUNNEL N P plain|jdk KEY < items");
      System.exit(2);
    }
    int port = Integer.parseInt(args[0]);
    String op = args[1];
    BloomFilterHelper<String> helper = new BloomFilterHelper<>(
        funnel(args[2]), Integer.parseInt(args[3]), Double.parseDouble(args[4]));
    byte[] key = keyBytes(args[5], args[6]);
    byte[] one = "1".getBytes(StandardCharsets.US_ASCII);
    try (Resp redis = new Resp(port)) {
      for (String item : readLines()) {
        int[] offsets = helper.murmurHashOffset(item);
        if (op.equals("add")) {
          // The posts' addByBloomFilter: one SETBIT round trip per offset.
          for (int i : offsets) {
            redis.integerCommand("SETBIT".getBytes(StandardCharsets.US_ASCII), key,
                Integer.toString(i).getBytes(StandardCharsets.US_ASCII), one);
          }
        } else if (op.equals("check")) {
          // The posts' includeByBloomFilter: GETBIT until a 0 is found.
          boolean present = true;
          for (int i : offsets) {
            if (redis.integerCommand("GETBIT".getBytes(StandardCharsets.US_ASCII), key,
                    Integer.toString(i).getBytes(StandardCharsets.US_ASCII)) == 0) {
              present = false;
              break;
            }
          }
          out.println(present ? "1" : "0");
        } else {
          System.err.println("unknown operation " + op);
          System.exit(2);
        }
      }
    } catch (IOException e) {
      System.err.println(e.getMessage());
      System.exit(3);
    }
    out.flush();
  }
}

// The Java side of redbloom's interop test: answers questions with Debian's
// Guava 31.1 (libguava-java) and with the blog posts' BloomFilterHelper
// (BloomFilterHelper.java, verbatim), so the C++ test can require identical answers.
//
// Items travel as lower-case hex of their bytes, one per line, so any content
// (newlines, NUL, astral-plane emoji, invalid UTF-8 for the bytes funnel)
// survives the pipe. String funnels decode the bytes strictly as UTF-8;
// int32/int64 funnels parse the decoded text as a decimal number.
//
// Usage (one JVM start costs about 0.3 s, so the test sends one batch):
//   java -cp guava.jar:DIR GuavaOracle batch < sections
// A section is a header line "@ID MODE ARGS..." followed by its data lines.
// The answer to each section is a line "@ID" followed by its result lines.
// MODE is one of:
//   hash FUNNEL         data: item hex       out: HashCode.toString() asLong()
//   offsets FUNNEL N P  data: item hex       out: the helper's offsets, space-separated
//   sizing              data: "N P"          out: see Sizing() below
//   filter FUNNEL N P   data: "A hex"/"Q hex" out: one 0/1 per data line (put()
//                       result for A, mightContain() for Q), then
//                       "geometry STRATEGY K WORDS" and "bitsset COUNT" from writeTo()
//   log                 data: P              out: raw bits of Math.log(P) and StrictMath.log(P)
// Each mode also works alone ("GuavaOracle hash utf8 < items") for debugging.
// P is a decimal number or "bits:" + 16 hex digits of Double.doubleToRawLongBits.
// Exit status: 0 ok, 2 bad input (one line on stderr).

import com.google.common.base.Charsets;
import com.google.common.hash.BloomFilter;
import com.google.common.hash.Funnel;
import com.google.common.hash.Funnels;
import com.google.common.hash.HashCode;
import com.google.common.hash.Hashing;
import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.OutputStreamWriter;
import java.io.PrintWriter;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

public final class GuavaOracle {

  /** Bad input from the caller: reported on stderr with exit status 2. */
  static final class BadInput extends Exception {
    private static final long serialVersionUID = 1L;

    BadInput(String message) {
      super(message);
    }
  }

  /** A funnel plus how an item's bytes become the value it funnels. */
  @SuppressWarnings({"rawtypes", "unchecked"})
  static final class Codec {
    final Funnel<Object> funnel;
    final String name;

    private Codec(String name, Funnel funnel) {
      this.name = name;
      this.funnel = funnel;
    }

    static Codec forName(String name) throws BadInput {
      switch (name) {
        case "utf8":
          return new Codec(name, Funnels.stringFunnel(Charsets.UTF_8));
        case "utf8x2":
          // The second post's funnel, as written there.
          return new Codec(
              name,
              (Funnel<String>)
                  (from, into) ->
                      into.putString(from, Charsets.UTF_8).putString(from, Charsets.UTF_8));
        case "int32":
          return new Codec(name, Funnels.integerFunnel());
        case "int64":
          return new Codec(name, Funnels.longFunnel());
        case "bytes":
          return new Codec(name, Funnels.byteArrayFunnel());
        default:
          throw new BadInput("unknown funnel '" + name + "'");
      }
    }

    Object decode(String hex) throws BadInput {
      byte[] bytes = fromHex(hex);
      switch (name) {
        case "bytes":
          return bytes;
        case "int32":
          try {
            return Integer.parseInt(strictUtf8(bytes));
          } catch (NumberFormatException e) {
            throw new BadInput("not an int32: " + hex);
          }
        case "int64":
          try {
            return Long.parseLong(strictUtf8(bytes));
          } catch (NumberFormatException e) {
            throw new BadInput("not an int64: " + hex);
          }
        default:
          return strictUtf8(bytes);
      }
    }
  }

  static byte[] fromHex(String hex) throws BadInput {
    if (hex.length() % 2 != 0) throw new BadInput("odd-length hex: " + hex);
    byte[] out = new byte[hex.length() / 2];
    for (int i = 0; i < out.length; i++) {
      int hi = Character.digit(hex.charAt(2 * i), 16);
      int lo = Character.digit(hex.charAt(2 * i + 1), 16);
      if (hi < 0 || lo < 0) throw new BadInput("bad hex: " + hex);
      out[i] = (byte) ((hi << 4) | lo);
    }
    return out;
  }

  // new String(bytes, UTF_8) would turn malformed input into U+FFFD silently
  // and hash something else than the C++ side does.
  static String strictUtf8(byte[] bytes) throws BadInput {
    try {
      return StandardCharsets.UTF_8
          .newDecoder()
          .onMalformedInput(CodingErrorAction.REPORT)
          .onUnmappableCharacter(CodingErrorAction.REPORT)
          .decode(ByteBuffer.wrap(bytes))
          .toString();
    } catch (CharacterCodingException e) {
      throw new BadInput("item is not valid UTF-8");
    }
  }

  static double parseP(String s) throws BadInput {
    try {
      if (s.startsWith("bits:")) {
        return Double.longBitsToDouble(Long.parseUnsignedLong(s.substring(5), 16));
      }
      return Double.parseDouble(s);
    } catch (NumberFormatException e) {
      throw new BadInput("bad error rate '" + s + "'");
    }
  }

  static long parseN(String s) throws BadInput {
    try {
      return Long.parseLong(s);
    } catch (NumberFormatException e) {
      throw new BadInput("bad capacity '" + s + "'");
    }
  }

  static void need(String[] args, int n, String usage) throws BadInput {
    if (args.length != n) throw new BadInput("usage: " + usage);
  }

  // ---------------------------------------------------------------------------
  // Modes. Each reads its data lines and writes its result lines.

  static void hash(String[] args, List<String> data, PrintWriter out) throws BadInput {
    need(args, 2, "hash FUNNEL");
    Codec codec = Codec.forName(args[1]);
    for (String line : data) {
      HashCode hc = Hashing.murmur3_128().hashObject(codec.decode(line), codec.funnel);
      out.print(hc.toString());
      out.print(' ');
      out.println(hc.asLong());
    }
  }

  static void offsets(String[] args, List<String> data, PrintWriter out) throws BadInput {
    need(args, 4, "offsets FUNNEL N P");
    Codec codec = Codec.forName(args[1]);
    long n = parseN(args[2]);
    if (n < 0 || n > Integer.MAX_VALUE) throw new BadInput("the helper takes an int capacity");
    BloomFilterHelper<Object> helper = new BloomFilterHelper<>(codec.funnel, (int) n, parseP(args[3]));
    StringBuilder sb = new StringBuilder();
    for (String line : data) {
      int[] offsets = helper.murmurHashOffset(codec.decode(line));
      sb.setLength(0);
      for (int i = 0; i < offsets.length; i++) {
        if (i > 0) sb.append(' ');
        sb.append(offsets[i]);
      }
      out.println(sb);
    }
  }

  // Guava's optimalNumOfBits/optimalNumOfHashFunctions are package-private;
  // reflection reaches them because guava.jar is on the class path (the
  // unnamed module), so sizes too large to allocate can still be compared.
  static Method optimalBits;
  static Method optimalHashes;

  static void loadGuavaSizing() throws ReflectiveOperationException {
    if (optimalBits != null) return;
    optimalBits = BloomFilter.class.getDeclaredMethod("optimalNumOfBits", long.class, double.class);
    optimalHashes =
        BloomFilter.class.getDeclaredMethod("optimalNumOfHashFunctions", long.class, long.class);
    optimalBits.setAccessible(true);
    optimalHashes.setAccessible(true);
  }

  /** What BloomFilter.writeTo says about a filter: its first 6 bytes. */
  static final class Header {
    int strategy;
    int hashes;
    long words;
  }

  /** Stops writeTo after the header: the longs that follow are not needed. */
  static final class HeaderOnly extends OutputStream {
    final ByteArrayOutputStream bytes = new ByteArrayOutputStream();

    @Override
    public void write(int b) throws IOException {
      bytes.write(b);
      if (bytes.size() == 6) throw new IOException("header complete");
    }
  }

  static Header readHeader(byte[] b) throws IOException {
    DataInputStream in = new DataInputStream(new ByteArrayInputStream(b));
    Header h = new Header();
    h.strategy = in.readByte();
    h.hashes = in.readUnsignedByte();
    h.words = in.readInt();
    return h;
  }

  // writeTo allocates the filter, so it is used only below this many bits.
  static final long WRITE_TO_MAX_BITS = 1L << 27;  // 16 MiB

  // One line per "N P" pair:
  //   seed M K | E     the helper's bitSize and numHashFunctions (E: n > int)
  //   guava M K SRC | E   Guava's bits (rounded up to 64) and hashes; SRC is
  //                    "w" when read back from writeTo, "r" when only
  //                    reflection was affordable; E when create() throws
  //   log HEX HEX      raw bits of Math.log(p) and StrictMath.log(p)
  // The helper keeps its sizing in private fields and is kept verbatim, so
  // they are read by reflection.
  static int helperField(BloomFilterHelper<?> h, String name) throws Exception {
    Field f = BloomFilterHelper.class.getDeclaredField(name);
    f.setAccessible(true);
    return f.getInt(h);
  }

  static void sizing(String[] args, List<String> data, PrintWriter out) throws Exception {
    need(args, 1, "sizing");
    loadGuavaSizing();
    Funnel<CharSequence> funnel = Funnels.stringFunnel(Charsets.UTF_8);
    for (String line : data) {
      String[] f = line.trim().split(" +");
      if (f.length != 2) throw new BadInput("sizing wants 'N P' lines, got: " + line);
      long n = parseN(f[0]);
      double p = parseP(f[1]);
      StringBuilder sb = new StringBuilder();

      if (n >= 0 && n <= Integer.MAX_VALUE) {
        BloomFilterHelper<CharSequence> h = new BloomFilterHelper<>(funnel, (int) n, p);
        sb.append("seed ").append(helperField(h, "bitSize")).append(' ')
            .append(helperField(h, "numHashFunctions"));
      } else {
        sb.append("seed E");
      }

      long rawBits = (long) optimalBits.invoke(null, n, p);
      int k = (int) optimalHashes.invoke(null, n, rawBits);
      if (rawBits > 0 && rawBits <= WRITE_TO_MAX_BITS) {
        try {
          BloomFilter<CharSequence> bf = BloomFilter.create(funnel, n, p);
          HeaderOnly sink = new HeaderOnly();
          try {
            bf.writeTo(sink);
          } catch (IOException expected) {
            // HeaderOnly stops the stream after 6 bytes.
          }
          Header hd = readHeader(sink.bytes.toByteArray());
          // Guava's own state must agree with its sizing functions, or the
          // reflection path below would be comparing the wrong thing.
          long rounded = (rawBits + 63) / 64 * 64;
          if (hd.words * 64 != rounded || hd.hashes != k || hd.strategy != 1) {
            throw new IllegalStateException(
                "writeTo header disagrees with optimalNumOfBits for " + line);
          }
          sb.append(" guava ").append(hd.words * 64).append(' ').append(hd.hashes).append(" w");
        } catch (IllegalArgumentException e) {
          sb.append(" guava E");
        }
      } else {
        // What BloomFilter.create would do, from its source: zero bits, more
        // than Integer.MAX_VALUE words, or k outside 1..255 throw.
        long words = (rawBits + 63) / 64;
        if (rawBits <= 0 || words > Integer.MAX_VALUE || k < 1 || k > 255) {
          sb.append(" guava E");
        } else {
          sb.append(" guava ").append(words * 64).append(' ').append(k).append(" r");
        }
      }

      sb.append(" log ")
          .append(Long.toHexString(Double.doubleToRawLongBits(Math.log(p))))
          .append(' ')
          .append(Long.toHexString(Double.doubleToRawLongBits(StrictMath.log(p))));
      out.println(sb);
    }
  }

  // Math.log is a HotSpot intrinsic, not fdlibm: raw bits of Math.log(p)
  // and StrictMath.log(p), one line per P.
  static void log(String[] args, List<String> data, PrintWriter out) throws BadInput {
    need(args, 1, "log");
    for (String line : data) {
      double p = parseP(line.trim());
      out.println(
          Long.toHexString(Double.doubleToRawLongBits(Math.log(p)))
              + " "
              + Long.toHexString(Double.doubleToRawLongBits(StrictMath.log(p))));
    }
  }

  static void filter(String[] args, List<String> data, PrintWriter out) throws Exception {
    need(args, 4, "filter FUNNEL N P");
    Codec codec = Codec.forName(args[1]);
    BloomFilter<Object> bf = BloomFilter.create(codec.funnel, parseN(args[2]), parseP(args[3]));
    for (String line : data) {
      if (line.length() < 2 || line.charAt(1) != ' ') throw new BadInput("bad filter line: " + line);
      Object item = codec.decode(line.substring(2));
      boolean answer;
      switch (line.charAt(0)) {
        case 'A':
          answer = bf.put(item);
          break;
        case 'Q':
          answer = bf.mightContain(item);
          break;
        default:
          throw new BadInput("bad filter line: " + line);
      }
      out.println(answer ? '1' : '0');
    }
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    bf.writeTo(bytes);
    DataInputStream in = new DataInputStream(new ByteArrayInputStream(bytes.toByteArray()));
    int strategy = in.readByte();
    int hashes = in.readUnsignedByte();
    int words = in.readInt();
    long set = 0;
    for (int i = 0; i < words; i++) set += Long.bitCount(in.readLong());
    out.println("geometry " + strategy + " " + hashes + " " + words);
    out.println("bitsset " + set);
  }

  static void run(String[] args, List<String> data, PrintWriter out) throws Exception {
    if (args.length == 0) throw new BadInput("missing mode");
    switch (args[0]) {
      case "hash":
        hash(args, data, out);
        break;
      case "offsets":
        offsets(args, data, out);
        break;
      case "sizing":
        sizing(args, data, out);
        break;
      case "filter":
        filter(args, data, out);
        break;
      case "log":
        log(args, data, out);
        break;
      default:
        throw new BadInput("unknown mode '" + args[0] + "'");
    }
  }

  static List<String> readLines(BufferedReader in) throws IOException {
    List<String> lines = new ArrayList<>();
    for (String line; (line = in.readLine()) != null; ) lines.add(line);
    return lines;
  }

  public static void main(String[] args) throws Exception {
    BufferedReader in =
        new BufferedReader(new InputStreamReader(System.in, StandardCharsets.US_ASCII), 1 << 16);
    PrintWriter out =
        new PrintWriter(
            new BufferedWriter(new OutputStreamWriter(System.out, StandardCharsets.US_ASCII), 1 << 16));
    try {
      List<String> lines = readLines(in);
      if (args.length == 1 && args[0].equals("batch")) {
        int i = 0;
        while (i < lines.size()) {
          String header = lines.get(i++);
          if (!header.startsWith("@")) throw new BadInput("expected a section header: " + header);
          String[] words = header.substring(1).trim().split(" +");
          List<String> data = new ArrayList<>();
          while (i < lines.size() && !lines.get(i).startsWith("@")) data.add(lines.get(i++));
          String[] mode = new String[words.length - 1];
          System.arraycopy(words, 1, mode, 0, mode.length);
          out.println("@" + words[0]);
          run(mode, data, out);
        }
      } else {
        run(args, lines, out);
      }
    } catch (BadInput e) {
      out.flush();
      System.err.println("GuavaOracle: " + e.getMessage());
      System.exit(2);
    }
    out.flush();
    if (out.checkError()) System.exit(3);
  }
}

// Guava's side of the import/export tests: writes BloomFilter.writeTo files,
// reads them back with readFrom, and answers mightContain, all with Debian's
// Guava. Items arrive on stdin as one hex-encoded UTF-8 string per line (or a
// decimal number for the long funnel), so any content survives the pipe.
//
//   java GuavaFiles write N FPP FUNNEL OUT    < items      put items, writeTo OUT
//   java GuavaFiles query IN FUNNEL           < probes     print 1/0 per probe
//   java GuavaFiles rewrite IN FUNNEL OUT                  readFrom IN, writeTo OUT
// FUNNEL is utf8 or int64.
import com.google.common.hash.BloomFilter;
import com.google.common.hash.Funnel;
import com.google.common.hash.Funnels;
import java.io.BufferedReader;
import java.io.FileInputStream;
import java.io.FileOutputStream;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

public final class GuavaFiles {
  private GuavaFiles() {}

  private static List<Object> readItems(String funnel) throws Exception {
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.US_ASCII));
    List<Object> items = new ArrayList<>();
    for (String line = in.readLine(); line != null; line = in.readLine()) {
      if (funnel.equals("int64")) {
        items.add(Long.parseLong(line));
      } else {
        byte[] bytes = new byte[line.length() / 2];
        for (int i = 0; i < bytes.length; i++) {
          bytes[i] = (byte) Integer.parseInt(line.substring(2 * i, 2 * i + 2), 16);
        }
        items.add(new String(bytes, StandardCharsets.UTF_8));
      }
    }
    return items;
  }

  @SuppressWarnings("unchecked")
  private static Funnel<Object> funnel(String name) {
    if (name.equals("int64")) return (Funnel<Object>) (Funnel<?>) Funnels.longFunnel();
    if (name.equals("utf8")) {
      return (Funnel<Object>) (Funnel<?>) Funnels.stringFunnel(StandardCharsets.UTF_8);
    }
    throw new IllegalArgumentException("unknown funnel " + name);
  }

  private static BloomFilter<Object> read(String path, String funnel) throws Exception {
    try (InputStream in = new FileInputStream(path)) {
      return BloomFilter.readFrom(in, funnel(funnel));
    }
  }

  public static void main(String[] args) throws Exception {
    switch (args[0]) {
      case "write": {
        BloomFilter<Object> bf =
            BloomFilter.create(funnel(args[3]), Long.parseLong(args[1]), Double.parseDouble(args[2]));
        for (Object item : readItems(args[3])) bf.put(item);
        try (OutputStream out = new FileOutputStream(args[4])) {
          bf.writeTo(out);
        }
        break;
      }
      case "query": {
        BloomFilter<Object> bf = read(args[1], args[2]);
        StringBuilder sb = new StringBuilder();
        for (Object item : readItems(args[2])) sb.append(bf.mightContain(item) ? "1\n" : "0\n");
        PrintStream out = new PrintStream(System.out, false, StandardCharsets.US_ASCII);
        out.print(sb);
        out.flush();
        break;
      }
      case "rewrite": {
        BloomFilter<Object> bf = read(args[1], args[2]);
        try (OutputStream out = new FileOutputStream(args[3])) {
          bf.writeTo(out);
        }
        break;
      }
      default:
        throw new IllegalArgumentException("unknown mode " + args[0]);
    }
  }
}

// The Java half of scripts/bench-core.sh: the same workload as
// bench/core_bench.cc with Guava's own BloomFilter (Debian's libguava-java
// 31.1), so the two can be printed side by side from one run.
//
// Workload per n (1e6 and 1e7 by default), error rate 1%, items "ORD-i":
//   add            put() of ORD-0 .. ORD-(n-1) into a new filter
//   contains_hit   mightContain() of 1e6 of them, evenly spaced
//   contains_miss  mightContain() of ORD-n .. ORD-(n+1e6-1), never added;
//                  the hits among them give the measured FPP
// The JIT is warmed up on the 1e6 workload first; then each n runs --reps
// times and the median ns per item is reported.
//
// Usage: java -Xms3g -Xmx3g -cp guava.jar:DIR GuavaBench [--reps=N] [--sizes=N,N]
// Prints progress on stderr and, on stdout, one line per workload:
//   WORKLOAD/SIZE <TAB> NS_PER_ITEM <TAB> FPP <TAB> BITS_PER_KEY

import com.google.common.base.Charsets;
import com.google.common.hash.BloomFilter;
import com.google.common.hash.Funnel;
import com.google.common.hash.Funnels;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

public final class GuavaBench {
  static final double ERROR_RATE = 0.01;
  static final int QUERIES = 1_000_000;
  static final Funnel<CharSequence> FUNNEL = Funnels.stringFunnel(Charsets.UTF_8);

  // Keeps the JIT from discarding answers nobody reads.
  static long sink;

  // The thread's CPU time, as core_bench reports it: on a shared machine
  // wall time also counts the time other processes held the core.
  static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();

  static long cpuNanos() {
    return THREADS.getCurrentThreadCpuTime();
  }

  static String[] orderIds(long first, int count, long stride) {
    String[] out = new String[count];
    for (int i = 0; i < count; i++) out[i] = "ORD-" + (first + i * stride);
    return out;
  }

  static final class Pass {
    double addNs;
    double hitNs;
    double missNs;
    double fpp;
    double bitsPerKey;
  }

  static Pass run(int n, String[] items, String[] present, String[] absent) throws IOException {
    Pass pass = new Pass();
    BloomFilter<CharSequence> bf = BloomFilter.create(FUNNEL, n, ERROR_RATE);

    long t0 = cpuNanos();
    for (String item : items) bf.put(item);
    long t1 = cpuNanos();
    pass.addNs = (double) (t1 - t0) / items.length;

    long found = 0;
    t0 = cpuNanos();
    for (String item : present) {
      if (bf.mightContain(item)) found++;
    }
    t1 = cpuNanos();
    pass.hitNs = (double) (t1 - t0) / present.length;
    if (found != present.length) {
      throw new IllegalStateException("Guava reported a false negative at n=" + n);
    }

    long falsePositives = 0;
    t0 = cpuNanos();
    for (String item : absent) {
      if (bf.mightContain(item)) falsePositives++;
    }
    t1 = cpuNanos();
    pass.missNs = (double) (t1 - t0) / absent.length;
    pass.fpp = (double) falsePositives / absent.length;
    sink += found + falsePositives;

    // writeTo's header: strategy byte, k byte, int count of 64-bit words.
    ByteArrayOutputStream header = new ByteArrayOutputStream();
    try {
      bf.writeTo(
          new java.io.OutputStream() {
            @Override
            public void write(int b) throws IOException {
              header.write(b);
              if (header.size() == 6) throw new IOException("header read");
            }
          });
    } catch (IOException expected) {
      // Only the header is wanted.
    }
    DataInputStream in = new DataInputStream(new ByteArrayInputStream(header.toByteArray()));
    in.readByte();
    in.readByte();
    pass.bitsPerKey = (double) in.readInt() * 64 / n;
    return pass;
  }

  static double median(List<Double> values) {
    double[] v = values.stream().mapToDouble(Double::doubleValue).toArray();
    Arrays.sort(v);
    return v.length % 2 == 1 ? v[v.length / 2] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2;
  }

  static String sizeName(int n) {
    return n == 1_000_000 ? "1e6" : n == 10_000_000 ? "1e7" : Integer.toString(n);
  }

  public static void main(String[] args) throws IOException {
    int reps = 5;
    List<Integer> sizes = List.of(1_000_000, 10_000_000);
    for (String arg : args) {
      if (arg.startsWith("--reps=")) {
        reps = Integer.parseInt(arg.substring(7));
      } else if (arg.startsWith("--sizes=")) {
        List<Integer> s = new ArrayList<>();
        for (String part : arg.substring(8).split(",")) s.add(Integer.parseInt(part));
        sizes = s;
      } else {
        System.err.println("GuavaBench: unknown argument " + arg);
        System.exit(2);
      }
    }

    // Warm-up: three passes at 1e6 let C2 compile put/mightContain/murmur3
    // before anything is measured.
    {
      int n = 1_000_000;
      String[] items = orderIds(0, n, 1);
      String[] absent = orderIds(n, QUERIES, 1);
      for (int i = 0; i < 3; i++) run(n, items, items, absent);
      System.err.println("GuavaBench: warmed up");
    }

    for (int n : sizes) {
      String[] items = orderIds(0, n, 1);
      String[] present = orderIds(0, QUERIES, Math.max(1, n / QUERIES));
      String[] absent = orderIds(n, QUERIES, 1);
      List<Double> add = new ArrayList<>(), hit = new ArrayList<>(), miss = new ArrayList<>();
      Pass last = null;
      for (int r = 0; r < reps; r++) {
        last = run(n, items, present, absent);
        add.add(last.addNs);
        hit.add(last.hitNs);
        miss.add(last.missNs);
        System.err.printf(
            "GuavaBench n=%s rep %d: add %.1f ns, contains hit %.1f ns, miss %.1f ns, fpp %.4f%%%n",
            sizeName(n), r + 1, last.addNs, last.hitNs, last.missNs, 100 * last.fpp);
      }
      // The items are the same every repetition, so FPP is too.
      String s = sizeName(n);
      System.out.printf("add/%s\t%.2f\t%.6f\t%.3f%n", s, median(add), last.fpp, last.bitsPerKey);
      System.out.printf(
          "contains_hit/%s\t%.2f\t%.6f\t%.3f%n", s, median(hit), last.fpp, last.bitsPerKey);
      System.out.printf(
          "contains_miss/%s\t%.2f\t%.6f\t%.3f%n", s, median(miss), last.fpp, last.bitsPerKey);
    }
    if (sink == 42) System.err.println();
  }
}

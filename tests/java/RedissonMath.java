// Redisson's arithmetic on a real JVM, for tests/redisson_test.cc: the
// formulas of org.redisson.RedissonBloomFilter (restated here; Redisson itself
// is not packaged in Debian), evaluated with the JDK's own Math and Double.
//
// One request per line on stdin, one answer per line on stdout:
//   size N PBITS      tryInit's sizing of n = N, p = Double.longBitsToDouble(PBITS):
//                     "M K", or "refused <message>"
//   count M K C       count() of a filter of M bits and K hashes with C bits set
//   string PBITS      Double.toString(p), what StringCodec writes for falseProbability
public final class RedissonMath {
  private RedissonMath() {}

  // optimalNumOfBits / optimalNumOfHashFunctions and tryInit's checks.
  static String size(long n, double p) {
    if (p > 1) {
      return "refused Bloom filter false probability can't be greater than 1";
    }
    if (p < 0) {
      return "refused Bloom filter false probability can't be negative";
    }
    double q = p == 0 ? Double.MIN_VALUE : p;
    long m = (long) (-n * Math.log(q) / (Math.log(2) * Math.log(2)));
    if (m == 0) {
      return "refused Bloom filter calculated size is " + m;
    }
    long max = Integer.MAX_VALUE * 2L;
    if (m > max) {
      return "refused Bloom filter size can't be greater than " + max
          + ". But calculated size is " + m;
    }
    int k = Math.max(1, (int) Math.round((double) m / n * Math.log(2)));
    return m + " " + k;
  }

  static long count(long size, int hashIterations, long c) {
    return Math.round(-size / ((double) hashIterations) * Math.log(1 - c / ((double) size)));
  }

  public static void main(String[] args) throws java.io.IOException {
    java.io.BufferedReader in =
        new java.io.BufferedReader(new java.io.InputStreamReader(System.in, "UTF-8"));
    StringBuilder out = new StringBuilder();
    for (String line; (line = in.readLine()) != null; ) {
      String[] f = line.split(" ");
      switch (f[0]) {
        case "size":
          out.append(size(Long.parseLong(f[1]), Double.longBitsToDouble(Long.parseLong(f[2]))));
          break;
        case "count":
          out.append(count(Long.parseLong(f[1]), Integer.parseInt(f[2]), Long.parseLong(f[3])));
          break;
        case "string":
          out.append(Double.toString(Double.longBitsToDouble(Long.parseLong(f[1]))));
          break;
        default:
          throw new IllegalArgumentException("unknown request: " + line);
      }
      out.append('\n');
    }
    System.out.print(out);
    System.out.flush();
  }
}

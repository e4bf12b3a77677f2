// Strategy "redisson": Redisson's RBloomFilter (org.redisson.RedissonBloomFilter),
// whose hash and index logic are unchanged since Redisson 3.6.0 (2018):
//   long[] h = Hash.hash128(bytes)        HighwayHash-128 under Redisson's key
//   long hash = h[0];
//   for (int i = 0; i < k; i++) {
//     idx[i] = (hash & Long.MAX_VALUE) % size;
//     hash += (i % 2 == 0) ? h[1] : h[0];
//   }
// with size the unrounded long of RedissonGeometry (sizing.h). The bytes are
// the codec's: StringCodec writes the string's UTF-8, LongCodec the decimal
// string of the long (both the utf8 encoding here), ByteArrayCodec the raw
// bytes (bytes). Redisson's default codec (Kryo) writes its own byte form,
// which no other language reproduces: the Java side must use one of these.
//
// On Redis, Redisson keeps its parameters in a hash beside the bitmap,
// {NAME}:config (the companion below), and its add and contains scripts
// refuse to run when its size and hashIterations differ from their own.
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "strategy/strategy_def.h"

namespace redbloom::internal {
namespace {

// org.redisson.misc.Hash's key.
constexpr HighwayKey kRedissonKey = {0x9e3779b97f4a7c15ULL, 0xf39cc0605cedc834ULL,
                                     0x1082276bf3a27251ULL, 0xf86c6a11d0c18e95ULL};

Hash128 Hash(std::string_view bytes) { return HighwayHash128(bytes, kRedissonKey); }

void Offsets(std::span<const Hash128> hashes, const Geometry& g, uint64_t* out) {
  for (const Hash128& hash : hashes) {
    uint64_t combined = hash.h1;
    for (uint32_t i = 0; i < g.hashes; ++i) {
      out[i] = (combined & 0x7fffffffffffffffULL) % g.bits;
      combined += (i % 2 == 0) ? hash.h2 : hash.h1;  // long addition, wraps mod 2^64
    }
    out += g.hashes;
  }
}

uint64_t EstimateItems(uint64_t bits_set, const Geometry& g) {
  return RedissonCount(bits_set, g.bits, g.hashes);
}

// Double.toString(v) as the Java SE 19+ specification states it (Raffaello
// Giulietti's algorithm): the shortest decimal that reads back as v (of one
// or two digits when one would do, whichever is closer), then written as
// "ddd.ddd" for 1e-3 <= |v| < 1e7 and "d.dddE[-]n" otherwise, always with a
// digit after the point. JDK 17 and older sometimes print a digit or two more
// than the shortest, for values far from any short decimal; no error rate
// anyone types (0.01, 1.0E-6, 0.0125) is among them, and Redisson reads the
// field back with Double.valueOf, so only the text differs, never the value.
std::string JavaDoubleToString(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  if (v == 0) return std::signbit(v) ? "-0.0" : "0.0";
  std::string out = v < 0 ? "-" : "";
  // d.ddde[+-]x: the digits and the decimal exponent of the first one.
  char buf[64];
  auto [end, ec] =
      std::to_chars(buf, buf + sizeof(buf), std::fabs(v), std::chars_format::scientific);
  std::string text(buf, end);
  auto split = [](const std::string& t, std::string* digits, int* exponent) {
    const size_t e = t.find('e');
    *digits = t.substr(0, e);
    std::erase(*digits, '.');
    *exponent = std::atoi(t.c_str() + e + 1);
  };
  std::string digits;
  int exponent = 0;
  split(text, &digits, &exponent);
  if (digits.size() == 1) {
    // The closest two-digit decimal is closer than the one-digit one unless
    // its second digit is 0 (4.9E-324 for Double.MIN_VALUE, not 5.0E-324).
    auto [end2, ec2] =
        std::to_chars(buf, buf + sizeof(buf), std::fabs(v), std::chars_format::scientific, 1);
    std::string two;
    int two_exponent = 0;
    split(std::string(buf, end2), &two, &two_exponent);
    if (two.back() != '0') {
      digits = two;
      exponent = two_exponent;
    }
  }
  if (exponent >= -3 && exponent < 7) {
    if (exponent < 0) {
      out += "0." + std::string(static_cast<size_t>(-exponent - 1), '0') + digits;
    } else {
      const size_t whole = static_cast<size_t>(exponent) + 1;
      if (digits.size() <= whole) {
        out += digits + std::string(whole - digits.size(), '0') + ".0";
      } else {
        out += digits.substr(0, whole) + "." + digits.substr(whole);
      }
    }
    return out;
  }
  out += digits.substr(0, 1) + "." + (digits.size() > 1 ? digits.substr(1) : "0") + "E" +
         std::to_string(exponent);
  return out;
}

// tryInit's script: HSET size, hashIterations, expectedInsertions,
// falseProbability, each through StringCodec (Long/Integer/Double.toString).
std::vector<std::pair<std::string, std::string>> ConfigFields(uint64_t capacity, double error_rate,
                                                              const Geometry& g) {
  return {{std::string(kCompanionBitsField), std::to_string(g.bits)},
          {std::string(kCompanionHashesField), std::to_string(g.hashes)},
          {"expectedInsertions", std::to_string(capacity)},
          {"falseProbability", JavaDoubleToString(error_rate)}};
}

Status ConfigParameters(const FieldMap& f, std::string_view where, uint64_t* capacity,
                        double* error_rate) {
  auto corrupt = [&](const std::string& why) {
    return Status::DataLoss(std::string(where) + ": " + why);
  };
  auto text = [&](std::string_view field) -> Result<std::string> {
    auto it = f.find(field);
    if (it == f.end()) return corrupt("field '" + std::string(field) + "' is missing");
    return it->second;
  };
  REDBLOOM_ASSIGN_OR_RETURN(std::string size, text(kCompanionBitsField));
  REDBLOOM_ASSIGN_OR_RETURN(std::string hashes, text(kCompanionHashesField));
  REDBLOOM_ASSIGN_OR_RETURN(std::string n, text("expectedInsertions"));
  REDBLOOM_ASSIGN_OR_RETURN(std::string p, text("falseProbability"));
  Result<uint64_t> parsed_n = ParseUint64(n);
  if (!parsed_n.ok() || std::to_string(*parsed_n) != n) {
    return corrupt("expectedInsertions '" + n + "' is not a count");
  }
  Result<double> parsed_p = ParseDouble(p);
  if (!parsed_p.ok()) return corrupt("falseProbability '" + p + "' is not a number");
  Result<Geometry> g = RedissonGeometry(*parsed_n, *parsed_p);
  if (!g.ok()) {
    return corrupt("expectedInsertions " + n + " and falseProbability " + p +
                   " are refused by Redisson's own sizing: " + g.status().message());
  }
  // Redisson's scripts compare these two as strings: only the canonical
  // decimal of our sizing can pass them.
  if (size != std::to_string(g->bits) || hashes != std::to_string(g->hashes)) {
    return corrupt("size '" + size + "' and hashIterations '" + hashes +
                   "' do not follow from expectedInsertions " + n + " and falseProbability " + p +
                   " (Redisson's sizing gives size " + std::to_string(g->bits) +
                   " and hashIterations " + std::to_string(g->hashes) + ")");
  }
  *capacity = *parsed_n;
  *error_rate = *parsed_p;
  return Status::Ok();
}

const CompanionHash kConfigHash = {
    .suffix = "config",
    .fields = &ConfigFields,
    .parameters = &ConfigParameters,
};

}  // namespace

extern const StrategyDef kRedissonStrategy;
const StrategyDef kRedissonStrategy = {
    .id = Strategy::kRedisson,
    .name = "redisson",
    .summary = "Redisson's RBloomFilter: HighwayHash-128, unrounded m, its {NAME}:config on Redis",
    // StringCodec and LongCodec (the decimal string): utf8; ByteArrayCodec: bytes.
    .encodings = EncodingBit(Encoding::kUtf8) | EncodingBit(Encoding::kBytes),
    .hash = &Hash,
    .geometry = &RedissonGeometry,
    .given_geometry = nullptr,  // sized by capacity and error rate, as tryInit does
    .offsets = &Offsets,
    .false_positive_rate = &UniformFalsePositiveRate,
    .estimate_items = &EstimateItems,
    .check_parameters = &ValidateRedissonParameters,
    .companion = &kConfigHash,
    .java_writes_bits = true,
};

}  // namespace redbloom::internal

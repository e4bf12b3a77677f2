#include "redbloom/hash.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <memory>
#include <random>
#include <span>
#include <string>
#include <vector>

namespace redbloom {
namespace {

// SMHasher's verification of MurmurHash3_x64_128: hash keys {}, {0}, {0,1},
// ... {0..254} with seed 256-i, concatenate the 16-byte results, hash that with
// seed 0, and read the first 4 bytes little-endian. Appleby's published value
// for this function is 0x6384BA69; it pins the algorithm (block mixing, every
// tail length, finalisation) independently of Guava.
TEST(HashTest, MatchesSmhasherVerificationValue) {
  std::vector<uint8_t> key(256);
  std::vector<uint8_t> hashes(256 * 16);
  for (int i = 0; i < 256; ++i) {
    key[i] = static_cast<uint8_t>(i);
    const auto h = Murmur3_128(key.data(), i, 256 - i).bytes();
    std::copy(h.begin(), h.end(), hashes.begin() + i * 16);
  }
  const auto final_hash = Murmur3_128(hashes.data(), hashes.size(), 0).bytes();
  const uint32_t verification = final_hash[0] | (final_hash[1] << 8) | (final_hash[2] << 16) |
                                (static_cast<uint32_t>(final_hash[3]) << 24);
  EXPECT_EQ(verification, 0x6384BA69u);
}

// Golden values printed by Guava 31.1 (Debian's libguava-java):
//   Hashing.murmur3_128().hashString("hello", UTF_8) -> 029bbd41b3a7d8cb191dae486a901e5b
//   and its asLong() -> 0xcbd8a7b341bd9b02.
// The interop test compares thousands of items live against Java; this one
// pins the byte order of ToHex()/as_long() so a change fails without a JVM.
TEST(HashTest, SchemaMatchesGuavaGolden) {
  const Hash128 h = Murmur3_128(std::string_view("hello"));
  EXPECT_EQ(h.ToHex(), "029bbd41b3a7d8cb191dae486a901e5b");
  EXPECT_EQ(h.as_long(), 0xcbd8a7b341bd9b02ULL);
}

TEST(HashTest, BytesAreH1ThenH2LittleEndian) {
  const Hash128 h{0x0706050403020100ULL, 0x0f0e0d0c0b0a0908ULL};
  const auto b = h.bytes();
  for (int i = 0; i < 16; ++i) EXPECT_EQ(b[i], i) << "byte " << i;
  EXPECT_EQ(h.ToHex(), "000102030405060708090a0b0c0d0e0f");
}

TEST(HashTest, EveryTailLengthChangesTheHash) {
  // A missing fallthrough in the tail switch would make two lengths collide.
  std::string s;
  Hash128 previous = Murmur3_128(s);
  for (int len = 1; len <= 40; ++len) {
    s.push_back('x');
    const Hash128 h = Murmur3_128(s);
    EXPECT_NE(h, previous) << "length " << len;
    previous = h;
  }
}

// The tail is read as partial words. An item held in an allocation of
// exactly its size must be read inside it (ASan, in CI, fails a read past
// it), and bytes that follow an item must not reach its hash: each length is
// hashed alone, then in a larger buffer followed by 0xFF bytes.
TEST(HashTest, TailReadsStayInsideTheItem) {
  for (size_t len = 0; len <= 48; ++len) {
    auto alone = std::make_unique<uint8_t[]>(len);
    std::vector<uint8_t> padded(len + 16, 0xFF);
    for (size_t i = 0; i < len; ++i) alone[i] = padded[i] = static_cast<uint8_t>(0x30 + i);
    EXPECT_EQ(Murmur3_128(alone.get(), len, 0), Murmur3_128(padded.data(), len, 0))
        << "length " << len;
  }
}

// Murmur3_128Many must give each item's Murmur3_128. On a CPU with AVX-512
// (this project's CI host has it) batches of eight or more go through the
// vector form: groups of one length (with and without whole blocks), mixed
// lengths, short and long items side by side, and a count that is not a
// multiple of eight; batches of fewer than eight through the scalar loop.
TEST(HashTest, ManyEqualsOneAtATime) {
  std::mt19937_64 rng(17);
  std::vector<std::string> items;
  auto add = [&](size_t len) {
    std::string s(len, '\0');
    for (char& c : s) c = static_cast<char>(rng());
    items.push_back(std::move(s));
  };
  for (size_t len = 0; len <= 80; ++len) {
    for (int j = 0; j < 8; ++j) add(len);  // eight of each length
  }
  for (int j = 0; j < 800; ++j) add(rng() % 100);
  for (int j = 0; j < 400; ++j) add(rng() % 2 ? 3 : 300);
  for (int j = 0; j < 5; ++j) add(rng() % 40);
  std::vector<std::string_view> views(items.begin(), items.end());
  std::vector<Hash128> many(views.size());
  Murmur3_128Many(views, many.data());
  for (size_t i = 0; i < views.size(); ++i) {
    ASSERT_EQ(many[i], Murmur3_128(views[i]))
        << "item " << i << ", " << views[i].size() << " bytes";
  }
  // Short batches: fewer than eight take the scalar loop; 8 to 24 end in a
  // group of every size from 1 to 8 (its results stored under a mask).
  for (size_t n = 1; n <= 24; ++n) {
    const auto batch = std::span<const std::string_view>(views).subspan(600, n);
    Murmur3_128Many(batch, many.data());
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(many[i], Murmur3_128(batch[i])) << n << " items";
    EXPECT_EQ(many[n], Murmur3_128(views[n])) << "written past " << n << " items";
  }
}

// Murmur3_128Many says whether every byte it hashed is ASCII: a high bit
// anywhere (a 16-byte block, the tail's first or second word, the last item
// of a group or of a partial one) makes it false.
TEST(HashTest, ManySaysWhetherAllItemsAreAscii) {
  std::vector<std::string> items;
  // 10 to 30 bytes: byte 9 is in item 0's second tail word, bytes 0-15 in
  // item 20's block, 16 and 25 in its tail's first and second words.
  for (int i = 0; i < 21; ++i) items.push_back(std::string(10 + i, static_cast<char>('a' + i)));
  std::vector<Hash128> out(items.size());
  auto run = [&] {
    const std::vector<std::string_view> views(items.begin(), items.end());
    return Murmur3_128Many(views, out.data());
  };
  auto few = [&] {  // the last three alone: the scalar loop
    const std::vector<std::string_view> views(items.begin() + 18, items.end());
    return Murmur3_128Many(views, out.data());
  };
  EXPECT_TRUE(run());
  EXPECT_TRUE(few());
  for (size_t item : {size_t{0}, size_t{7}, size_t{20}}) {
    for (size_t at : {size_t{0}, size_t{9}, size_t{15}, size_t{16}, size_t{25}}) {
      if (at >= items[item].size()) continue;
      const char was = items[item][at];
      items[item][at] = static_cast<char>(0x80 | was);
      EXPECT_FALSE(run()) << "item " << item << ", byte " << at;
      if (item == 20) {
        EXPECT_FALSE(few()) << "byte " << at;
      }
      items[item][at] = was;
    }
  }
  EXPECT_TRUE(run());
  EXPECT_TRUE(few());
}

// Each item of Murmur3_128Many ends where readable memory ends (the next page
// is PROT_NONE), so a read past an item's last byte would crash the test.
TEST(HashTest, ManyReadsNothingPastItems) {
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  void* map = ::mmap(nullptr, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(map, MAP_FAILED);
  auto* bytes = static_cast<char*>(map);
  ASSERT_EQ(::mprotect(bytes + page, page, PROT_NONE), 0);
  for (size_t i = 0; i < page; ++i) bytes[i] = static_cast<char>(i * 7 + 1);
  std::vector<std::string_view> views;
  for (size_t len = 0; len <= 72; ++len) views.emplace_back(bytes + page - len, len);
  std::vector<Hash128> many(views.size());
  Murmur3_128Many(views, many.data());
  for (size_t i = 0; i < views.size(); ++i) EXPECT_EQ(many[i], Murmur3_128(views[i])) << i;
  ::munmap(map, 2 * page);
}

}  // namespace
}  // namespace redbloom

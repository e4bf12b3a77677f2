// The names a file: store gives its files inside its directory DIR:
// DIR/NAME.rbf for a filter, DIR/.NAME.parts/PART.rbf for the parts of
// scaling and window filters (docs/file-format.md). Front ends ask the
// store (Store::OwnsPath), which must not be written over (`export --file`).
#ifndef REDBLOOM_FILE_FILE_LAYOUT_H_
#define REDBLOOM_FILE_FILE_LAYOUT_H_

#include <filesystem>
#include <string>
#include <string_view>

namespace redbloom::internal {

inline constexpr std::string_view kFilterFileSuffix = ".rbf";

inline std::string PartsDirName(std::string_view name) {
  return "." + std::string(name) + ".parts";
}

// Whether `path` is a name a file: store in `dir` keeps for its own files
// (a filter's, or anything in a parts directory). Both paths are compared as
// given: pass canonical ones.
inline bool IsFileStoreName(const std::filesystem::path& dir, const std::filesystem::path& path) {
  const std::filesystem::path parent = path.parent_path();
  if (parent == dir) return path.extension() == kFilterFileSuffix;
  const std::string parts = parent.filename().string();
  return parent.parent_path() == dir && parts.starts_with('.') && parts.ends_with(".parts");
}

}  // namespace redbloom::internal

#endif  // REDBLOOM_FILE_FILE_LAYOUT_H_

// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// checkpoint/impl/TernaryCounter_AtomicFile.cpp: a file replaced whole with no temporary left,
// an interrupted write's temporaries removed (and nothing else), paths that are never replaced,
// and reads that refuse a FIFO or folder without blocking.
#include "Test_Helpers.hpp"

#include "checkpoint/impl/TernaryCounter_AtomicFile.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace TernaryCounter::Test {
namespace AtomicFileTest {

namespace fs = std::filesystem;

fs::path fresh_dir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() /
                       ("ternarycounter_atomic_file_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::string contents(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::size_t entries(const fs::path& dir) {
  return std::size_t(std::distance(fs::directory_iterator(dir), fs::directory_iterator()));
}

TEST(AtomicFile, ReplacesWholeAndLeavesNoTemporary) {
  const fs::path dir = fresh_dir("replace");
  const fs::path file = dir / "c.safetensors";
  ASSERT_TRUE(Impl::replaceable(file.string()));  // nothing there yet
  Impl::replace_file(file.string(), std::string("first\0bytes", 11));
  EXPECT_EQ(contents(file), std::string("first\0bytes", 11));
  Impl::replace_file(file.string(), "second");
  EXPECT_EQ(contents(file), "second");
  EXPECT_EQ(entries(dir), 1u);
  EXPECT_EQ(fs::status(file).permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read |
                fs::perms::others_read);
  fs::remove_all(dir);
}

TEST(AtomicFile, RemovesOnlyTheTemporariesOfAnInterruptedWrite) {
  const fs::path dir = fresh_dir("stale");
  const fs::path file = dir / "c.safetensors";
  for (const char* name : {"c.safetensors.tmp-AbC123", "c.safetensors.tmp-short",
                           "d.safetensors.tmp-AbC123", "c.safetensors.tmp-AbC1234"}) {
    std::ofstream(dir / name) << "x";
  }
  fs::create_directory(dir / "c.safetensors.tmp-folder");  // six characters, not a file
  Impl::replace_file(file.string(), "new");
  EXPECT_FALSE(fs::exists(dir / "c.safetensors.tmp-AbC123"));
  EXPECT_TRUE(fs::exists(dir / "c.safetensors.tmp-short"));
  EXPECT_TRUE(fs::exists(dir / "d.safetensors.tmp-AbC123"));
  EXPECT_TRUE(fs::exists(dir / "c.safetensors.tmp-AbC1234"));
  EXPECT_TRUE(fs::exists(dir / "c.safetensors.tmp-folder"));
  EXPECT_EQ(contents(file), "new");
  fs::remove_all(dir);
}

TEST(AtomicFile, FailuresNameWhatFailedAndLeaveNothing) {
  const fs::path dir = fresh_dir("fail");
  const std::string missing = (dir / "no_such_folder" / "c.safetensors").string();
  try {
    Impl::replace_file(missing, "x");
    FAIL() << "wrote into a folder that does not exist";
  } catch (const Impl::FileError& e) {
    EXPECT_EQ(
        std::string(e.what()).rfind("cannot create a temporary file for " + missing + ": ", 0), 0u)
        << e.what();
  }
  EXPECT_EQ(entries(dir), 0u);
  fs::remove_all(dir);
}

TEST(AtomicFile, SpecialFilesAreNeitherReplacedNorRead) {
  const fs::path dir = fresh_dir("special");
  const fs::path fifo = dir / "fifo", folder = dir / "folder", link = dir / "link";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  fs::create_directory(folder);
  std::ofstream(dir / "target") << "t";
  fs::create_symlink(dir / "target", link);
  for (const fs::path& p : {fifo, folder, link}) {
    EXPECT_FALSE(Impl::replaceable(p.string())) << p;
  }
  EXPECT_TRUE(Impl::replaceable((dir / "target").string()));
  for (const fs::path& p : {fifo, folder}) {
    try {
      Impl::ReadableFile file(p.string());  // a FIFO without a writer must not block
      FAIL() << "opened " << p;
    } catch (const Impl::FileError& e) {
      EXPECT_EQ(std::string(e.what()), "not a regular file (a FIFO, device or folder is refused)");
    }
  }
  EXPECT_THROW(Impl::ReadableFile((dir / "absent").string()), Impl::FileError);
  fs::remove_all(dir);
}

TEST(AtomicFile, ReadsExactlyWhatIsAsked) {
  const fs::path dir = fresh_dir("read");
  Impl::replace_file((dir / "f").string(), "0123456789");
  Impl::ReadableFile file((dir / "f").string());
  EXPECT_EQ(file.size(), 10u);
  std::string out = ">";
  ASSERT_TRUE(file.read_exactly(out, 4));
  ASSERT_TRUE(file.read_exactly(out, 6));
  EXPECT_EQ(out, ">0123456789");
  EXPECT_FALSE(file.read_exactly(out, 1));  // past the end
  fs::remove_all(dir);
}

}  // namespace AtomicFileTest
}  // namespace TernaryCounter::Test

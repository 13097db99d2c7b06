// A test fixture that runs the pmlab binary in a fresh scratch directory of its own per test.
#pragma once

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "process.hpp"

namespace pmlab::testing {

// dir_ is empty at the start of every test and removed after it; the process log lives beside
// it (dir_ + ".log"), so a test can check that a refused command left the directory empty.
class PmlabCliTest : public ::testing::Test {
 protected:
  explicit PmlabCliTest(std::string prefix) : prefix_(std::move(prefix)) {}
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           (prefix_ + "-" +
            std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) + "-" +
            std::to_string(::getpid()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override {
    std::filesystem::remove_all(dir_);
    std::filesystem::remove(dir_.string() + ".log");
  }
  ProcessResult pmlab(std::vector<std::string> args) const {
    args.insert(args.begin(), PMLAB_BINARY);
    return run_process(args, dir_.string() + ".log");
  }
  [[nodiscard]] std::string pool() const { return (dir_ / "p").string(); }
  [[nodiscard]] bool empty_dir() const { return std::filesystem::is_empty(dir_); }
  std::filesystem::path dir_;

 private:
  std::string prefix_;
};

}  // namespace pmlab::testing

// Row-major matrix and vector views over (persistent or plain) memory; no ownership.
#pragma once

#include <cstddef>

namespace pmlab::mem {

template <class T>
class MatrixView {
 public:
  MatrixView() = default;
  MatrixView(T* data, std::size_t rows, std::size_t cols, std::size_t ld)
      : data_(data), rows_(rows), cols_(cols), ld_(ld) {}
  MatrixView(T* data, std::size_t rows, std::size_t cols) : MatrixView(data, rows, cols, cols) {}

  [[nodiscard]] T* at(std::size_t i, std::size_t j) const { return data_ + i * ld_ + j; }
  [[nodiscard]] T* row(std::size_t i) const { return data_ + i * ld_; }
  [[nodiscard]] T* data() const { return data_; }
  [[nodiscard]] std::size_t rows() const { return rows_; }
  [[nodiscard]] std::size_t cols() const { return cols_; }
  [[nodiscard]] std::size_t ld() const { return ld_; }
  [[nodiscard]] std::size_t bytes() const { return rows_ * ld_ * sizeof(T); }

 private:
  T* data_ = nullptr;
  std::size_t rows_ = 0, cols_ = 0, ld_ = 0;
};

}  // namespace pmlab::mem

#pragma once
// StateDict: named tensors in insertion order (PyTorch's OrderedDict of a state_dict). Modules
// produce and consume it (nn/module.hpp); safetensors reads and writes it (state/safetensors.hpp).
#include <string>
#include <utility>
#include <vector>

#include "../tensor/tensor.hpp"

namespace tg {

class StateDict {
public:
  using value_type = std::pair<std::string, Tensor>;
  using iterator = std::vector<value_type>::iterator;
  using const_iterator = std::vector<value_type>::const_iterator;

  StateDict() = default;
  StateDict(std::initializer_list<value_type> items);

  /// Adds `name` (or replaces the tensor already stored under it).
  void insert(const std::string& name, const Tensor& t);
  /// The tensor stored under `name`, inserting an undefined one when absent (as std::map).
  Tensor& operator[](const std::string& name);
  /// The tensor stored under `name`; throws tg::error naming the key when absent.
  const Tensor& at(const std::string& name) const;
  Tensor* find(const std::string& name);
  const Tensor* find(const std::string& name) const;
  bool contains(const std::string& name) const;
  bool erase(const std::string& name);
  std::vector<std::string> keys() const;
  std::size_t size() const;
  bool empty() const;
  iterator begin();
  iterator end();
  const_iterator begin() const;
  const_iterator end() const;

private:
  std::vector<value_type> items_;
};

} // namespace tg

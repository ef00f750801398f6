// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Which task the main job trains: --dataset fashion-mnist or teacher; without --dataset,
// Fashion-MNIST when its files are in the data folder, else the synthetic teacher task. Takes
// --dataset and --data-dir out of the arguments and says why it chose what it chose.
#pragma once

#include "FashionMnist.hpp"

#include <stdexcept>
#include <string>
#include <vector>

namespace TernaryCounter::Train {

struct DatasetChoice {
  std::string dataset;            ///< "fashion-mnist" or "teacher"
  std::string data_dir;           ///< where the Fashion-MNIST files are (or were looked for)
  std::string reason;             ///< one line for the log
  std::vector<std::string> rest;  ///< the other arguments, in order
};

inline DatasetChoice choose_dataset(const std::vector<std::string>& args) {
  DatasetChoice choice;
  choice.data_dir = fashion_mnist_default_dir;
  for (std::size_t a = 0; a < args.size(); ++a) {
    if (args[a] == "--dataset" || args[a] == "--data-dir") {
      if (a + 1 >= args.size()) throw std::invalid_argument(args[a] + " needs a value");
      (args[a] == "--dataset" ? choice.dataset : choice.data_dir) = args[a + 1];
      ++a;
    } else {
      choice.rest.push_back(args[a]);
    }
  }
  if (choice.dataset != "" && choice.dataset != "fashion-mnist" && choice.dataset != "teacher") {
    throw std::invalid_argument("--dataset must be fashion-mnist or teacher, got '" +
                                choice.dataset + "'");
  }
  if (!choice.dataset.empty()) {
    choice.reason = "--dataset " + choice.dataset;
    return choice;
  }
  const std::string missing = missing_fashion_mnist_file(choice.data_dir);
  if (missing.empty()) {
    choice.dataset = "fashion-mnist";
    choice.reason = "the default: its files are in " + choice.data_dir;
  } else {
    choice.dataset = "teacher";
    choice.reason = "the default without Fashion-MNIST: no " + missing + "[.gz] in " +
                    choice.data_dir + " (install dataset-fashion-mnist or pass --data-dir)";
  }
  return choice;
}

}  // namespace TernaryCounter::Train

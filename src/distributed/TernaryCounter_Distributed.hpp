// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// TernaryCounter::Distributed (target TernaryCounter::Distributed): data-parallel training over
// MPI, bit-identical to one process for any number of ranks. Link the target, initialize MPI
// before Kokkos, and make a Communicator.
#pragma once

#include "TernaryCounter_Blocks.hpp"
#include "TernaryCounter_Communicator.hpp"
#include "TernaryCounter_DistributedCheckpoint.hpp"
#include "TernaryCounter_DistributedLinear.hpp"
#include "TernaryCounter_DistributedUpdate.hpp"
#include "TernaryCounter_SettingsAgreement.hpp"

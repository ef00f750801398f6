// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// TernaryCounter: memory-native ternary counter weights on Kokkos. Include this header.
#pragma once

#include "TernaryCounter_Activations.hpp"
#include "TernaryCounter_Checkpoint.hpp"
#include "TernaryCounter_Codes.hpp"
#include "TernaryCounter_DataParallelPhases.hpp"
#include "TernaryCounter_GradientFromIO.hpp"
#include "TernaryCounter_HalfFloats.hpp"
#include "TernaryCounter_Hash.hpp"
#include "TernaryCounter_LayerCheckpoint.hpp"
#include "TernaryCounter_Linear.hpp"
#include "TernaryCounter_Loss.hpp"
#include "TernaryCounter_PackedState.hpp"
#include "TernaryCounter_Params.hpp"
#include "TernaryCounter_PortableMath.hpp"
#include "TernaryCounter_Precision.hpp"
#include "TernaryCounter_Schedule.hpp"
#include "TernaryCounter_ScratchMemory.hpp"
#include "TernaryCounter_TernaryLinear.hpp"
#include "TernaryCounter_Update.hpp"
#include "TernaryCounter_UpdateFromIO.hpp"

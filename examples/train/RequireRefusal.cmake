# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# require_refusal(NAME EXPECTED RC OUT ERR): what CheckTrainRefusals and CheckTrainMPIMismatch
# demand of a run that must be refused: a prompt exit in [1, 127] (no hang, no signal, no rc 0)
# and an error on stderr that matches EXPECTED.
function(require_refusal name expected rc out err)
  if(NOT rc MATCHES "^[0-9]+$" OR rc EQUAL 0 OR rc GREATER_EQUAL 128)
    message(FATAL_ERROR "${name}: rc '${rc}' (expected a prompt exit in [1, 127])\n${out}\n${err}")
  endif()
  if(NOT err MATCHES "${expected}")
    message(FATAL_ERROR "${name}: stderr does not match '${expected}':\n${err}")
  endif()
  message(STATUS "${name}: refused (rc ${rc})")
endfunction()

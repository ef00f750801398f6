#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Writes the seed corpora of the fuzz targets (committed; rerun after a format change):
corpus/checkpoint: valid checkpoints, truncated ones and edited ones; corpus/params: parameter
records in fuzz_params.cpp's byte layout, valid and at the edges."""
import json, os, struct

here = os.path.dirname(os.path.abspath(__file__))


def checkpoint(layers, C=8, step=42, metadata=None, edit=None):
    """layers: [(name, out, in)]; codes are valid for C (all 'zero' codes, C-1 + lv)."""
    meta = {"C": str(C), "format_version": "1", "step": str(step)}
    meta.update(metadata or {})
    header, data, f32, u8 = {"__metadata__": meta}, b"", [], []
    lv = 2 * C - 1
    zero = lv + C - 1  # t = 0, c = 0
    for name, out, inn in layers:
        for part in ("scale", "v"):
            begin = len(data)
            data += b"".join(struct.pack("<f", 0.5 + o if part == "scale" else 1e-3 * o)
                             for o in range(out))
            header[f"{name}.{part}"] = {"dtype": "F32", "shape": [out, 1],
                                        "data_offsets": [begin, len(data)]}
    for name, out, inn in layers:
        begin = len(data)
        word = zero | zero << 6 | zero << 12 | zero << 18
        group = struct.pack("<I", word)[:3]
        data += group * (out * inn // 4)
        header[f"{name}.state"] = {"dtype": "U8", "shape": [out, 3 * inn // 4],
                                   "data_offsets": [begin, len(data)]}
    text = json.dumps(header, separators=(",", ":"))
    if edit:
        text = text.replace(*edit)
    text += " " * ((8 - len(text) % 8) % 8)
    return struct.pack("<Q", len(text)) + text.encode() + data


def params(C=8, lr=0.05, lr_scale=2e-4, beta=0.9, eps=1e-3, clip=0.0, seed=1, lagged=0,
           row_offset=0, team=0, out=3, inn=8, grads=()):
    rec = struct.pack("<bdddddIBqhBb", C, lr, lr_scale, beta, eps, clip, seed, lagged,
                      row_offset, team, out, inn)
    return rec + b"".join(struct.pack("<f", g) for g in grads)


def write(folder, name, data):
    os.makedirs(os.path.join(here, "corpus", folder), exist_ok=True)
    with open(os.path.join(here, "corpus", folder, name), "wb") as f:
        f.write(data)


valid = checkpoint([("fc1", 3, 8), ("fc2", 2, 4)], metadata={"note": "a \"quoted\" note\n"})
write("checkpoint", "valid_two_layers", valid)
write("checkpoint", "valid_c11", checkpoint([("layer", 4, 12)], C=11, step=0))
write("checkpoint", "valid_empty", checkpoint([]))
write("checkpoint", "truncated_header", valid[:40])
write("checkpoint", "truncated_data", valid[:-1])
write("checkpoint", "trailing_byte", valid + b"x")
write("checkpoint", "edited_shape", checkpoint([("fc1", 3, 8)], edit=('"shape":[3,6]', '"shape":[3,9]')))
write("checkpoint", "edited_offsets", checkpoint([("fc1", 3, 8)], edit=("[0,12]", "[0,11]")))
write("checkpoint", "edited_dtype", checkpoint([("fc1", 3, 8)], edit=('"U8"', '"I8"')))
write("checkpoint", "edited_C", checkpoint([("fc1", 3, 8)], edit=('"C":"8"', '"C":"12"')))
write("checkpoint", "edited_duplicate_key", checkpoint([("fc1", 3, 8)], edit=('"step"', '"C"')))
write("checkpoint", "edited_huge_shape", checkpoint(
    [("x", 1, 4)], edit=('"shape":[1,3]', '"shape":[16777248,1099509530628]')))

write("params", "valid_defaults", params(grads=[0.25 * k for k in range(24)]))
write("params", "valid_lagged_clip", params(C=11, lagged=1, clip=1.0, grads=[1.0] * 24))
write("params", "nonfinite_gradient", params(grads=[float("inf")] + [0.5] * 23))
write("params", "lr_overflows_float", params(lr=1e39))
write("params", "eps_underflows_float", params(eps=1e-50))
write("params", "bad_shape", params(inn=6))
write("params", "big_team", params(team=4096))
write("params", "row_offset_overflows", params(row_offset=2**63 - 2, grads=[0.5] * 24))
write("params", "row_offset_largest", params(row_offset=2**63 - 4, grads=[0.5] * 24))


def train_options(mode, *strings):
    """fuzz_train_options.cpp's layout: a mode byte (0 teacher options, 1 image options, 2 teacher
    metadata, 3 image metadata), then NUL-separated strings (arguments, or key, value pairs)."""
    return bytes([mode]) + b"\0".join(s.encode() for s in strings)


write("train_options", "teacher_valid", train_options(
    0, "--steps", "30", "--batch", "60", "--eval", "250", "--seed", "7", "--save", "x"))
write("train_options", "teacher_huge_batch", train_options(0, "--batch", "9223372036854775807"))
write("train_options", "teacher_seed_wraps", train_options(0, "--seed", "4294967297"))
write("train_options", "teacher_empty_value", train_options(0, "--steps", ""))
write("train_options", "image_valid", train_options(
    1, "--epochs", "2", "--batch", "90", "--hidden", "64,32", "--lr", "0.003", "--C", "8"))
write("train_options", "image_bad_real", train_options(1, "--lr", "", "--rms-beta", "nan"))
write("train_options", "teacher_metadata", train_options(
    2, "seed", "1", "in", "32", "hidden", "128", "classes", "4", "teacher-hidden", "16",
    "batch", "256"))
write("train_options", "teacher_metadata_batch0", train_options(
    2, "seed", "1", "in", "32", "hidden", "128", "classes", "4", "teacher-hidden", "16",
    "batch", "0"))
write("train_options", "image_metadata", train_options(
    3, "seed", "1", "hidden", "512,256", "epochs", "8", "batch", "256", "train-limit", "0",
    "C", "8", "lr", "0.003", "lr-scale", "0.02", "rms-beta", "0.99", "decay-lr-scale", "0"))

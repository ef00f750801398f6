"""The TernaryLinear update settings that char_lm.py and llama_pretrain.py both take on their
command lines, and the RMS moment's bias correction as an lr factor (--rms-warmup)."""

import math


def add_update_options(parser, rms_eps=1e-3, rms_beta=0.99):
    """--rms-beta (default rms_beta), --rms-eps (default rms_eps), --clip and --rms-warmup (the
    other update settings differ in the two examples: their lr is per layer in one and per fan-in
    in the other)."""
    parser.add_argument("--rms-beta", type=float, default=rms_beta,
                        help=f"the TernaryLinear rms_beta (default {rms_beta:g})")
    parser.add_argument("--rms-eps", type=float, default=rms_eps,
                        help=f"the TernaryLinear rms_eps (default {rms_eps:g})")
    parser.add_argument("--clip", type=float, default=0.0, help="the TernaryLinear clip")
    parser.add_argument("--rms-warmup", action="store_true",
                        help="scale the TernaryLinear lr by sqrt(1 - rms_beta^(step+1)), the RMS "
                             "moment's bias correction (v starts at 0)")


def update_settings(args):
    """The TernaryLinear keyword arguments of those options."""
    return dict(rms_beta=args.rms_beta, rms_eps=args.rms_eps, clip=args.clip)


def moment_factor(args, step):
    """The lr factor of (0-based) step: sqrt(1 - rms_beta^(step+1)) with --rms-warmup, else 1."""
    return math.sqrt(1 - args.rms_beta ** (step + 1)) if args.rms_warmup else 1.0

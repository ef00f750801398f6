"""The examples' loss curves: one value of every logged point of each run (a --curve record of
char_lm.py or llama_pretrain.py) against steps and against training seconds, side by side."""

import json


def plot_runs(path, curve_paths, value, ylabel, title, name_of, log_scale=False):
    """Draws `value` of each run's points to the PNG `path`; name_of(run) labels a run, and
    runs without points are left out."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (by_step, by_time) = plt.subplots(1, 2, figsize=(12, 4.5))
    for curve_path in curve_paths:
        with open(curve_path) as f:
            run = json.load(f)
        points = run["points"]
        if not points:
            continue
        name = name_of(run)
        by_step.plot([p["step"] for p in points], [p[value] for p in points], label=name)
        by_time.plot([p["seconds"] for p in points], [p[value] for p in points], label=name)
    for axes, xlabel in ((by_step, "step"), (by_time, "training seconds")):
        axes.set_xlabel(xlabel)
        axes.set_ylabel(ylabel + (", log scale" if log_scale else ""))
        if log_scale:
            axes.set_yscale("log")  # excursions and the slow tail on one axis
        axes.grid(alpha=0.3, which="both")
        axes.legend(fontsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(f"plot: {path}")

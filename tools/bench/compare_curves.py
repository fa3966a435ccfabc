"""Training-loss curves of runs beside a base run's (tools/check_gpu.sh's precision and
finetune parts): for each other run, the steps both logged, the largest and mean |loss
difference|, the last common step's losses, the mean examples/s after --after, and the loss
scale at the end where the run logs one (fp16); --table adds the losses step by step.

  compare_curves.py [--after STEP] [--table] BASE_RUN OTHER_RUN...   (output directories)
"""
import argparse
import json
import os
import sys


def curve(run):
    out = {}
    with open(os.path.join(run, "metrics.jsonl")) as f:
        for line in f:
            j = json.loads(line)
            if j.get("type") == "train":
                out[j["step"]] = (j["loss"], j.get("examples_per_second"), j.get("loss_scale"))
    return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--after", type=int, default=0)
    p.add_argument("--table", action="store_true")
    p.add_argument("base")
    p.add_argument("others", nargs="+")
    a = p.parse_args()
    name = lambda run: os.path.basename(os.path.normpath(run))
    try:
        base = curve(a.base)
    except OSError as e:
        sys.exit(f"no base curve: {e}")
    for run in a.others:
        try:
            c = curve(run)
        except OSError as e:
            print(f"{name(run)}: no curve ({e})")
            continue
        common = sorted(set(base) & set(c))
        diffs = [abs(c[s][0] - base[s][0]) for s in common]
        late = [s for s in common if s > a.after]
        speed = lambda cv: sum(cv[s][1] for s in late) / max(1, len(late))
        last = common[-1]
        print(f"{name(run)} vs {name(a.base)}: {len(common)} logged steps, max |train loss diff| {max(diffs):.4f}, "
              f"mean {sum(diffs) / len(diffs):.4f}; loss at step {last}: {c[last][0]:.4f} vs {base[last][0]:.4f}; "
              f"examples/s after step {a.after}: {speed(c):.1f} vs {speed(base):.1f}"
              + (f"; loss scale at the end {c[last][2]}" if c[last][2] else ""))
        if a.table:
            print(f"step  {name(a.base)}  {name(run)}  loss scale")
            for s in common:
                print(f"{s:4d}  {base[s][0]:.4f}  {c[s][0]:.4f}  {c[s][2]}")


if __name__ == "__main__":
    main()

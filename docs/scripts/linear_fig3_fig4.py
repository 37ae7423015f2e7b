"""Reproduce Fig. 3 and Fig. 4 of paper 000 (softmax inverse classification) on two data sets.

* Fig. 3: histogram of the number of step sizes tried by the backtracking line search (ρ = 0.8,
  from α = 1) of the paper's Newton method (``method="woodbury"``), over the problems of
  Appendix A at their own λ.
* Fig. 4 (left): Newton iterations against λ ∈ [1e-4, 1e2] (100 values), each λ solved from x̄
  (no warm start), averaged over the problems: fastcf's K-dimensional Newton (``"reduced"``) and
  the paper's D-dimensional one (``"woodbury"``).
* Fig. 4 (right): total time of the 100-value λ-path with and without warm start (mean ± std over
  the problems), for both methods, plus the total Newton iterations (a machine-independent
  count).

The reduced path uses the public ``LinearExplainer.path(..., warm_start=True|False)``. The
public API has no warm-started Woodbury path, so the Woodbury timings call the very function
that ``explain(method="woodbury")`` runs, ``fastcf._linear.reference.woodbury_newton``, with
``x_init`` = the previous solution (warm) or x̄ (cold).

Run from the repository root:  python docs/scripts/linear_fig3_fig4.py [--problems N]
"""

import argparse
import sys
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import linear_problems as lp  # noqa: E402

from fastcf._linear import reference as _solvers  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
LAMS = np.logspace(2, -4, 100)  # large to small: the order of the warm-started path
TOL = 1e-8  # the paper's stopping rule, ‖∇E‖ < 1e-8 (§5.1)


def woodbury_path(ex, G, x0, k, warm):
    A, b = ex.coef_, ex.intercept_
    ones, free = np.ones(x0.shape[0]), np.ones(x0.shape[0], dtype=bool)
    x, nit, trials, status = None, [], [], []
    for lam in LAMS:
        prob = _solvers.SoftmaxProblem(A, b, x0, k, lam, ones, free)
        xs, it, st, _g, info = _solvers.woodbury_newton(prob, G, x_init=x, tol=TOL)
        nit.append(it)
        status.append(st)
        trials.extend(info["trials"])
        x = xs if warm else None
    return np.array(nit), trials, np.array(status)


def run(name, n_far, n_second):
    ex, X, acc = lp.load(name)
    probs = lp.problems(ex, X, n_far=n_far, n_second=n_second)
    G = ex.coef_ @ ex.coef_.T
    cls = list(ex.classes_.tolist())
    x0, k0, _ = probs[0]
    ex.path(x0, k0, LAMS)  # compile outside the timings
    ex.path(x0, k0, LAMS, warm_start=False)
    ex.explain(x0, k0, lam=0.01, method="woodbury")

    # Fig. 3: backtracking trials of the paper's Newton at the problems' own λ (public API)
    trials_own, first_own, nit_own, ok_own = [], [], [], []
    for x, k, lam in probs:
        res = ex.explain(x, k, lam=lam, method="woodbury", tol=TOL)
        tr = res.info["per_query"][0]["trials"]
        trials_own.extend(tr)
        first_own.append(tr[0] if tr else 0)
        nit_own.append(res.nit)
        ok_own.append(res.status == 0)

    # p_target at the answer of each problem (reduced solver), far-class and second-class groups
    pk = np.array([ex.explain(x, k, lam=lam, tol=TOL).proba[cls.index(k)] for x, k, lam in probs])
    out = {
        "pk_far": (pk[:n_far].min(), pk[:n_far].max()),
        "pk_second": (pk[n_far:].min(), pk[n_far:].max()),
        "name": name,
        "D": X.shape[1],
        "K": len(cls),
        "train_acc": acc,
        "n_problems": len(probs),
        "trials_own": np.array(trials_own),
        "first_own": np.array(first_own),
        "nit_own": np.array(nit_own),
        "converged_own": int(np.sum(ok_own)),
    }
    rows = {key: [] for key in ("red_w", "red_c", "wb_w", "wb_c")}
    nits = {key: [] for key in rows}
    trials_path, bad = [], 0
    for x, k, _lam in probs:
        for key, warm in (("red_w", True), ("red_c", False)):
            ts = []
            for _ in range(5):
                t = time.perf_counter()
                p = ex.path(x, k, LAMS, warm_start=warm, tol=TOL)
                ts.append(time.perf_counter() - t)
            rows[key].append(min(ts))
            nits[key].append(p.nit)
            bad += int(np.sum(p.status != 0) - np.sum(p.status == 5))
        for key, warm in (("wb_w", True), ("wb_c", False)):
            t = time.perf_counter()
            nit, tr, st = woodbury_path(ex, G, x, cls.index(k), warm)
            rows[key].append(time.perf_counter() - t)
            nits[key].append(nit)
            if not warm:
                trials_path.extend(tr)
            bad += int(np.sum(st != 0))
    out["time"] = {key: np.array(v) for key, v in rows.items()}
    out["nit"] = {key: np.array(v) for key, v in nits.items()}
    out["n_not_converged"] = bad
    return out


def hist_counts(trials, top=10):
    t = np.asarray(trials)
    counts = [int(np.sum(t == i)) for i in range(1, top)] + [int(np.sum(t >= top))]
    return counts


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--problems", type=int, default=50, help="problems per data set (40 + 10)")
    args = ap.parse_args()
    n_far = round(args.problems * 0.8)
    n_second = args.problems - n_far
    t_start = time.perf_counter()
    results = [run(name, n_far, n_second) for name in lp.DATASETS]

    # ---- Fig. 3
    fig, axes = plt.subplots(1, len(results), figsize=(4.5 * len(results), 3.4), sharey=False)
    md = [
        'Backtracking line search of the paper\'s Newton method (`method="woodbury"`, ρ = 0.8, '
        "α = 1 first): number of step sizes tried per iteration, over the problems of Appendix A "
        "at their own λ. Generated by `docs/scripts/linear_fig3_fig4.py`.",
        "",
        "| data | problems | iterations | 1 trial | 2 | 3 | 4 | 5 | 6–9 | ≥ 10 | "
        "≥ 10 at the first iteration | max | mean Newton iterations |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for ax, r in zip(axes, results, strict=True):
        t = r["trials_own"]
        c = hist_counts(t)
        ax.bar(np.arange(1, 11), c, color="C0")
        ax.set_xticks(np.arange(1, 11), [str(i) for i in range(1, 10)] + ["≥10"])
        ax.set(
            xlabel="step sizes tried per Newton iteration",
            ylabel="count",
            title=f"{lp.DATASETS[r['name']]}\n{r['n_problems']} problems, {t.size} iterations",
        )
        md.append(
            f"| {lp.DATASETS[r['name']]} | {r['n_problems']} | {t.size} | "
            + " | ".join(str(v) for v in c[:5])
            + f" | {sum(c[5:9])} | {c[9]} | {int(np.sum(r['first_own'] >= 10))} | {int(t.max())}"
            + f" | {r['nit_own'].mean():.1f} |"
        )
    fig.suptitle("Fig. 3: backtracking trials of Newton's method (woodbury)", fontsize=10)
    fig.tight_layout()
    fig.savefig(ROOT / "figures" / "linear_fig3.png", dpi=110)
    plt.close(fig)
    (ROOT / "tables" / "linear_fig3.md").write_text("\n".join(md) + "\n")

    # ---- Fig. 4 left
    fig, axes = plt.subplots(1, len(results), figsize=(4.5 * len(results), 3.4), sharey=True)
    csv = ["dataset,lam,nit_reduced_cold,nit_woodbury_cold,nit_reduced_warm,nit_woodbury_warm"]
    for ax, r in zip(axes, results, strict=True):
        n = r["nit"]
        for key, lab, st in (
            ("red_c", "reduced (K-dim Newton)", "-"),
            ("wb_c", "woodbury (paper's Newton)", "--"),
        ):
            ax.semilogx(LAMS, n[key].mean(axis=0), st, label=lab)
        ax.set(
            xlabel="λ",
            ylabel="Newton iterations (mean)",
            title=lp.DATASETS[r["name"]],
        )
        ax.legend(fontsize=8)
        means = {key: n[key].mean(axis=0) for key in n}
        for i, lam in enumerate(LAMS):
            csv.append(
                f"{r['name']},{lam:.6g},{means['red_c'][i]:.3f},{means['wb_c'][i]:.3f},"
                f"{means['red_w'][i]:.3f},{means['wb_w'][i]:.3f}"
            )
    fig.suptitle("Fig. 4 (left): iterations against λ, each λ solved from x̄", fontsize=10)
    fig.tight_layout()
    fig.savefig(ROOT / "figures" / "linear_fig4.png", dpi=110)
    plt.close(fig)
    (ROOT / "tables" / "linear_fig4_iterations.csv").write_text("\n".join(csv) + "\n")

    # ---- Fig. 4 right
    def ms(a):
        return f"{1e3 * a.mean():.2f} ± {1e3 * a.std():.2f}"

    md = [
        "Total time (ms) of a 100-value λ-path (λ from 1e2 down to 1e-4), mean ± std over the "
        "problems, with and without warm start, and the total Newton iterations of the path "
        "(mean). fastcf's reduced path is the public `ex.path(x, k, lams, warm_start=...)` "
        "(best of 5 runs per problem); the paper's Newton is "
        "`fastcf._linear.reference.woodbury_newton`, one run per problem. "
        "Generated by `docs/scripts/linear_fig3_fig4.py`.",
        "",
        "| data | method | warm start (ms) | no warm start (ms) | speed-up | iterations warm | "
        "iterations cold |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in results:
        T, n = r["time"], r["nit"]
        for w, c, lab in (("red_w", "red_c", "reduced"), ("wb_w", "wb_c", "woodbury")):
            md.append(
                f"| {lp.DATASETS[r['name']]} | {lab} | {ms(T[w])} | {ms(T[c])} | "
                f"{T[c].mean() / T[w].mean():.1f}× | {n[w].sum(axis=1).mean():.0f} | "
                f"{n[c].sum(axis=1).mean():.0f} |"
            )
    md += [
        "",
        "| data | woodbury / reduced, warm | woodbury / reduced, cold |",
        "|---|---|---|",
    ]
    for r in results:
        T = r["time"]
        md.append(
            f"| {lp.DATASETS[r['name']]} | {T['wb_w'].mean() / T['red_w'].mean():.0f}× | "
            f"{T['wb_c'].mean() / T['red_c'].mean():.0f}× |"
        )
    md += [
        "",
        "Problems per data set: "
        + ", ".join(
            f"{lp.DATASETS[r['name']]}: {r['n_problems']} (training accuracy {r['train_acc']:.3f}; "
            f"solves not converged: {r['n_not_converged']}; p_target at the answer "
            f"{r['pk_far'][0]:.3f}–{r['pk_far'][1]:.3f} for the farthest-class problems, "
            f"{r['pk_second'][0]:.3f}–{r['pk_second'][1]:.3f} for the second-class ones)"
            for r in results
        )
        + f". Script wall time {time.perf_counter() - t_start:.0f} s.",
    ]
    (ROOT / "tables" / "linear_fig4_warmstart.md").write_text("\n".join(md) + "\n")
    print("\n".join(md))
    print((ROOT / "tables" / "linear_fig3.md").read_text())


if __name__ == "__main__":
    main()

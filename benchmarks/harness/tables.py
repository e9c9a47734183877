"""The generated part of `docs/benchmarks.md`: per posterior, every sampler's figures
(medians over repeats), its ESS per 1000 gradients and check of the means, the NUTS summary,
the pooled NUTS summary over runs, and the compile-cache check."""

from __future__ import annotations

from pathlib import Path

from .comparison import nuts_comparison, pool_results
from .settings import DOC_PATH
from .stats import Z_FLAG

BEGIN, END = "<!-- BEGIN GENERATED (benchmarks/run.py) -->", "<!-- END GENERATED -->"


def write_between_markers(path: Path, begin: str, end: str, inner: str, header: str) -> None:
    """Write `begin + inner + end` over the part of `path` between the markers, keeping the
    hand-written text around them; a file without them is written anew, `header` first."""
    block = f"{begin}{inner}{end}"
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists():
        text = path.read_text()
        if begin in text and end in text:
            pre, rest = text.split(begin, 1)
            path.write_text(pre + block + rest.split(end, 1)[1])
            return
    path.write_text(header + block + "\n")


def show(v, fmt="{:.3g}"):
    """A number as a table cell ("–" for none)."""
    return "–" if v is None else fmt.format(v)


def show_mmm(d, fmt="{:.3g}"):
    return " / ".join(show(d.get(k), fmt) for k in ("min", "median", "max"))


def show_mm(d, fmt="{:.3g}"):
    d = d or {}
    return " / ".join(show(d.get(k), fmt) for k in ("min", "median"))


def _ratio_cell(r: dict | None, fig: str) -> str:
    if not r or r.get(fig) is None:
        return "–"
    reps = r.get(fig + "_per_repeat") or []
    spread = f" ({min(reps):.2f}–{max(reps):.2f})" if len(reps) > 1 else ""
    return f"{r[fig]:.2f}{spread}"


def _nuts_columns(others: list[str], chains: int, draws: int) -> list[tuple]:
    """The NUTS summary's columns: (header, cell(name, row, medians)), where `row` is the
    posterior's `nuts_comparison` and `medians` bomcmc's, then each other NUTS's."""
    short = {"numpyro-nuts": "NumPyro", "blackjax-nuts": "BlackJAX"}
    names = " / ".join(["bomcmc"] + [short[o] for o in others])

    def each(get, fmt):  # one figure of every sampler, "a / b / c"
        return lambda name, row, med: " / ".join(show(get(m), fmt) for m in med)

    def ratios(fig, label):  # bomcmc ÷ each other NUTS
        return [(f"{label} ÷ {short[o]}",
                 lambda name, row, med, o=o: _ratio_cell(row.get(o), fig)) for o in others]

    def check(flag):
        return lambda name, row, med: ("yes" if all(row[o][flag] for o in others if o in row)
                                       else "**no**")

    return [
        ("posterior", lambda name, row, med: f"`{name}`"),
        ("d", lambda name, row, med: f"{row['dim']}"),
        (f"min ESS/grad ({names})",
         each(lambda m: (m.get("ess_per_grad") or {}).get("min"), "{:.3g}")),
        *ratios("ess_per_grad", "ESS/grad"),
        (f"min ESS/s ({names})", each(lambda m: (m.get("ess_per_s") or {}).get("min"), "{:.3g}")),
        *ratios("ess_per_s", "ESS/s"),
        *ratios("s_per_lockstep_grad", "s per lockstep grad"),
        (f"adapted ε, median over chains ({names})",
         each(lambda m: (m.get("step_size_chains") or {}).get("median"), "{:.3g}")),
        (f"grads/draw ({names})",
         each(lambda m: m["n_grad"] / (chains * draws) if m.get("n_grad") else None, "{:.1f}")),
        (f"div. ({names})", each(lambda m: m.get("divergences"), "{:.0f}")),
        ("ESS/grad ±20 %", check("ess_per_grad_ok")),
        ("ESS/s ≥", check("ess_per_s_ok")),
    ]


def render_nuts_summary(result: dict, title: str = "NUTS: bomcmc ÷ NumPyro and ÷ BlackJAX"
                        ) -> list[str]:
    comp = nuts_comparison(result)
    if not comp:
        return []
    others = [o for o in ("numpyro-nuts", "blackjax-nuts")
              if any(o in row for row in comp.values())]
    args = result["meta"]["args"]
    columns = _nuts_columns(others, args["chains"], args["draws"])
    lines = [
        f"#### {title}",
        "",
        "Ratios of medians over repeats (in brackets: the lowest and highest per-repeat "
        "ratio, same seed and starting points). Checks: ESS/s ratio ≥ 1 against each, "
        "ESS/grad ratio within 1 ± 0.2 against each. \"s per lockstep grad\" = sampling "
        "seconds ÷ Σ_t max_c n_{t,c} (gradients of the slowest chain per transition): the "
        "cost of the code per gradient, free of how long the trajectories happened to be; "
        "below 1 means bomcmc's code is faster.",
        "",
        "| " + " | ".join(header for header, _ in columns) + " |",
        "|" + "---|" * len(columns),
    ]
    for name, row in comp.items():
        sams = result["posteriors"][name]["samplers"]
        med = [sams[o]["median"] if o in sams else {} for o in ["bomcmc-nuts"] + others]
        lines.append("| " + " | ".join(cell(name, row, med) for _, cell in columns) + " |")
    return lines + [""]


def render_efficiency(post: dict) -> list[str]:
    """Per posterior: ESS per 1000 gradients with and without the warm-up's gradients, ESS
    per second, R-hat and the check of the posterior means against the reference. Empty for
    results written before these figures existed."""
    if not any("ess_per_kgrad" in s["median"] for s in post["samplers"].values()):
        return []
    ref = post.get("reference") or {}
    lines = ["", "ESS per 1000 gradients (min / median over coordinates) of the sampling "
             "phase and of warm-up + sampling; max R-hat (ArviZ rank-normalised split R-hat); "
             f"max over coordinates of |mean − reference| / MCSE (flagged above {Z_FLAG:g}). "
             f"Reference: {ref.get('source', 'none')}.", "",
             "| sampler | ESS/1000 grads, sampling | ESS/1000 grads, incl. warm-up "
             "| ESS/s min / med | warm-up grads | sampling grads | max R-hat | max \\|z\\| |",
             "|---|---|---|---|---|---|---|---|"]
    for sname, s in post["samplers"].items():
        md = s["median"]
        z = show(md.get("mean_z_max"), "{:.2f}")
        if md.get("mean_z_flag"):
            z = f"**{z} (> {Z_FLAG:g})**"
        lines.append(
            f"| {sname} | {show_mm(md.get('ess_per_kgrad'))} "
            f"| {show_mm(md.get('ess_per_kgrad_incl_warmup'))} "
            f"| {show_mm(md.get('ess_per_s'))} | {show(md.get('n_grad_warmup'), '{:.0f}')} "
            f"| {show(md.get('n_grad'), '{:.0f}')} | {show(md.get('rhat_max'), '{:.3f}')} | {z} |")
    return lines


def render(result: dict) -> str:
    m, a = result["meta"], result["meta"]["args"]
    v, mach = m["versions"], m["machine"]
    lines = [
        f"### Run `{m['tag']}` — {m['date']}",
        "",
        f"- Command: `{m['command']}`",
        f"- Machine: {mach['cpu']}, {mach['cpu_count']} logical CPUs "
        f"({mach['cpu_affinity']} usable), JAX backend `{mach['jax_backend']}`; "
        f"load average at start {', '.join(f'{x:.2f}' for x in mach['loadavg_at_start'] or [])} "
        "(the machine is shared, so absolute seconds are noisy; ratios are measured side by side)",
        f"- Versions: bomcmc {v.get('bomcmc')} (git {v.get('bomcmc_git')}), jax {v.get('jax')}, "
        f"jaxlib {v.get('jaxlib')}, numpyro {v.get('numpyro')}, blackjax {v.get('blackjax')}, "
        f"arviz {v.get('arviz')}, Python {mach['python']}",
        f"- Settings: {a['chains']} chains (vmapped), {a['warmup']} warm-up + {a['draws']} draws "
        f"per chain, {'float64' if a['float64'] else 'float32'}, {a['repeats']} repeat(s) "
        f"(figures are medians over repeats), floors = {a['floor_evals']} chained "
        "`vmap(grad)` (the specified floor) or `vmap(value_and_grad)` (value kept live) "
        "evaluations in one compiled `fori_loop`, timed just before and just after each "
        "sampler run and averaged",
        "",
    ]
    lines += render_nuts_summary(result)
    for name, post in result["posteriors"].items():
        lines += [
            f"#### `{name}` (d = {post['dim']})",
            "",
            "| sampler | knobs | accept | ESS/grad min / med / max | ESS/s min / med / max "
            "| grads/draw/chain | warm-up grads | div. | sampling s | end-to-end s "
            "| floor µs grad / v+g | **overhead ratio** (grad floor) | overhead ratio (v+g floor) "
            "| lockstep | v+g ratio ÷ lockstep |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for sname, s in post["samplers"].items():
            md = s["median"]
            sc = md.get("step_size_chains")
            knobs = (f"ε={md['knobs']['step_size']:g}, L={int(md['knobs']['steps'])}"
                     if md.get("knobs") else
                     f"adapted ε {show(sc['median'])} [{show(sc['min'])}, {show(sc['max'])}]"
                     if sc and sc.get("median") is not None else
                     f"adapted ε≈{show(md.get('step_size'))}")
            gpd = (md["n_grad"] / ((md.get("chains_run") or a["chains"]) * a["draws"])
                   if md.get("n_grad") else None)
            vg = md.get("overhead_ratio_vg")
            lf = md.get("lockstep_factor")
            floors = (f"{show(md['floor_s'] * 1e6 if md.get('floor_s') else None, '{:.1f}')} / "
                      f"{show(md['floor_vg_s'] * 1e6 if md.get('floor_vg_s') else None, '{:.1f}')}")
            lines.append(
                f"| {sname} | {knobs} | {show(md.get('accept_mean'), '{:.2f}')} "
                f"| {show_mmm(md['ess_per_grad'], '{:.2g}')} "
                f"| {show_mmm(md['ess_per_s'], '{:.3g}')} "
                f"| {show(gpd, '{:.1f}')} | {show(md.get('n_grad_warmup'), '{:.0f}')} "
                f"| {show(md.get('divergences'), '{:.0f}')} | {show(md.get('wall_s'), '{:.2f}')} "
                f"| {show(md.get('end_to_end_s'), '{:.1f}')} | {floors} "
                f"| **{show(md.get('overhead_ratio'), '{:.2f}')}** | {show(vg, '{:.2f}')} "
                f"| {show(lf, '{:.2f}')} | {show(vg / lf if vg and lf else None, '{:.2f}')} |"
            )
        lines += render_efficiency(post)
        per_rep = []
        for sname, s in post["samplers"].items():
            ratios = ", ".join(f"{show(r.get('overhead_ratio'), '{:.2f}')} "
                               f"({show(r.get('overhead_ratio_vg'), '{:.2f}')})"
                               for r in s["repeats"])
            per_rep.append(f"{sname} {ratios}")
        lines += ["", "Overhead ratio per repeat, grad floor (v+g floor): "
                  f"{'; '.join(per_rep)}.", ""]
        extra = []
        for sname, s in post["samplers"].items():
            md = s["median"]
            bits = [f"sampling {show(md.get('wall_s'), '{:.2f}')} s",
                    f"warm-up {show(md.get('wall_s_warmup'), '{:.2f}')} s",
                    f"compile {show(md.get('compile_s'), '{:.1f}')} s"]
            if md.get("wall_s_incl_compile") is not None:
                bits.append(f"MCMC.run incl. compile {show(md['wall_s_incl_compile'], '{:.2f}')} s")
            extra.append(f"- {sname}: {', '.join(bits)}; ESS bulk min/med/max "
                         f"{show_mmm(md['ess_bulk'], '{:.0f}')}")
        lines += ["Seconds (medians):", ""] + extra + [""]
    cc = result.get("cache_check")
    if cc:
        lines += [
            "#### Persistent compilation cache",
            "",
            f"Two fresh processes, same cache directory: `{cc['command']}`.",
            "",
            "| run | process wall s (incl. Python + imports) | `bomcmc.sample` wall_s_total "
            "| compile_s |",
            "|---|---|---|---|",
        ]
        for which in ("first", "second"):
            r = cc[which]
            lines.append(f"| {which} | {r['process_s']:.2f} | {r['wall_s_total']:.2f} "
                         f"| {r['compile_s']:.2f} |")
        lines += ["", f"Cache entries written: {cc['cache_files']} files.", ""]
    return "\n".join(lines)


DOC_HEADER = """# Benchmarks

How bomcmc's samplers (fixed-L HMC, NUTS) compare with NumPyro's and BlackJAX's NUTS when
they run side by side in one process. Produced by `benchmarks/run.py` (see `benchmarks/README.md` for
the definitions); the section between the GENERATED markers is rewritten on every run, the
rest of this file is kept.

"""


def render_pooled(results: list[dict]) -> str:
    pooled = pool_results(results)
    if pooled is None:
        return ""
    tags = ", ".join(f"`{r['meta']['tag']}`" for r in results
                     if r["meta"]["tag"] in pooled["meta"]["tag"].split(" + "))
    counts = sorted({len(p["seeds"]) for p in pooled["posteriors"].values()})
    lines = [f"### NUTS, the repeats of runs {tags} pooled",
             "",
             f"{' or '.join(map(str, counts))} repeats per posterior (distinct seeds; sampler "
             "order and machine load as in each run below). Figures are medians over the "
             "pooled repeats.", ""]
    lines += render_nuts_summary(pooled, "NUTS, pooled: bomcmc ÷ NumPyro and ÷ BlackJAX")
    return "\n".join(lines)


def write_doc(results: list[dict], path: Path = DOC_PATH) -> None:
    """Regenerate the document's generated part from these results (pooled NUTS first)."""
    pooled = render_pooled(results)
    body = "\n\n".join(([pooled] if pooled else []) + [render(r) for r in results])
    write_between_markers(path, BEGIN, END, f"\n\n{body}\n\n", DOC_HEADER)

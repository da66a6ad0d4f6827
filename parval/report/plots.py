"""Memory timeline plots (optional: needs the `plots` extra, i.e. matplotlib).

matplotlib is imported inside the function so parval works without it; the Agg canvas
is used directly (no pyplot), so no display and no global backend state is touched.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from parval.jsonread import as_float

if TYPE_CHECKING:
    from matplotlib.axes import Axes

MISSING_MATPLOTLIB = "matplotlib not installed: pip install 'parval[plots]' for plots"

# phase base name -> shade colour; anything else is left unshaded
_PHASE_COLOURS = {
    "startup": "#d9d9d9",
    "idle": "#d9d9d9",
    "cold_load": "#b3e2cd",
    "cold_wave": "#66c2a5",
    "warm_wave": "#8da0cb",
    "mixed_wave": "#bc80bd",
    "unload": "#fb8072",
    "reload": "#fdb462",
    "serial": "#e5c494",
}


# (sample key, legend label, line style, colour) per axis
_HOST_LINES = (("rss_mib", "host RSS (tree)", "-", "C0"), ("pss_mib", "host PSS (tree)", "--", "C1"))
_GPU_LINES = (("device_used_mib", "GPU device used", "-", "C2"), ("process_mib", "GPU server processes", "--", "C3"))


def _time(sample: Mapping[str, object]) -> float:
    return as_float(sample["t"])


def _plot_lines(
    ax: Axes, rows: list[Mapping[str, object]], t0: float, lines: tuple[tuple[str, str, str, str], ...], ylabel: str
) -> None:
    """One axis: a line per sample key that has values, time measured from `t0`."""
    for key, label, style, colour in lines:
        pts = [(as_float(r["t"]) - t0, as_float(r[key])) for r in rows if r.get(key) is not None]
        if pts:
            ax.plot([p[0] for p in pts], [p[1] for p in pts], style, color=colour, linewidth=1.2, label=label)
    ax.set_ylabel(ylabel)


def _base(phase: str) -> str:
    return phase.split(":", 1)[0]


def _wave_label(phase: str) -> str:
    base, _, k = phase.partition(":")
    return f"{base.removesuffix('_wave')}{k}" if k else base.removesuffix("_wave")


def plot_memory_timeline(
    samples: Sequence[Mapping[str, object]], transitions: list[tuple[float, str]], path: Path, *, title: str
) -> str | None:
    """Write a PNG of host RSS/PSS (and GPU device/process memory) over time.

    Returns None on success, or a message when plotting is unavailable or there is
    nothing to plot.
    """
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
        from matplotlib.patches import Patch
    except ImportError:
        return MISSING_MATPLOTLIB
    if not samples:
        return "no memory samples to plot"

    t0 = min(as_float(s["t"]) for s in samples)
    t_end = max(as_float(s["t"]) for s in samples)
    host = sorted((s for s in samples if s.get("kind") == "host"), key=_time)
    gpu = sorted((s for s in samples if s.get("kind") == "gpu"), key=_time)

    fig = Figure(figsize=(12, 6.5 if gpu else 4), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(2 if gpu else 1, 1, sharex=True, squeeze=False)[:, 0]

    _plot_lines(axes[0], host, t0, _HOST_LINES, "host MiB")
    if gpu:
        _plot_lines(axes[1], gpu, t0, _GPU_LINES, "GPU MiB")
    axes[-1].set_xlabel("seconds from first sample")

    # phase shading: each transition lasts until the next one (or the last sample)
    spans = sorted(transitions)
    shaded: dict[str, str] = {}
    for i, (t, phase) in enumerate(spans):
        start = max(t - t0, 0.0)
        end = (spans[i + 1][0] if i + 1 < len(spans) else t_end) - t0
        shade = _PHASE_COLOURS.get(_base(phase))
        if end <= start or shade is None:
            continue
        shaded.setdefault(_base(phase), shade)
        for ax in axes:
            ax.axvspan(start, end, color=shade, alpha=0.35, linewidth=0)
        if _base(phase).endswith("_wave"):
            for ax in axes:
                ax.axvline(start, color="#444444", linewidth=0.6, linestyle=":")
            axes[0].annotate(
                _wave_label(phase),
                xy=(start, 1.0),
                xycoords=("data", "axes fraction"),
                xytext=(2, -2),
                textcoords="offset points",
                fontsize=7,
                rotation=90,
                va="top",
            )

    handles, labels = axes[0].get_legend_handles_labels()
    for ax in axes[1:]:
        h, lab = ax.get_legend_handles_labels()
        handles += h
        labels += lab
    handles += [Patch(color=c, alpha=0.35) for c in shaded.values()]
    labels += list(shaded)
    if handles:
        fig.legend(handles, labels, loc="outside right upper", fontsize=8)
    fig.suptitle(title)
    for ax in axes:
        ax.grid(True, alpha=0.3)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format="png")
    return None

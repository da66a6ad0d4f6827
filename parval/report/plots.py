"""Memory charts: Mermaid `xychart-beta` blocks for the markdown report (a pull-request
comment renders them inline), and PNG timelines written beside the evidence (optional: needs
the `plots` extra, i.e. matplotlib).

matplotlib is imported inside the function so parval works without it; the Agg canvas
is used directly (no pyplot), so no display and no global backend state is touched.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

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
    samples: Sequence[Mapping[str, object]],
    transitions: list[tuple[float, str]],
    path: Path,
    *,
    title: str,
    unloaded: bool = True,
) -> str | None:
    """Write a PNG of host RSS/PSS (and GPU device/process memory) over time, up to the last
    sample taken while the server ran. `unloaded`: whether any unload succeeded; when none
    did (404), the unload and reload phases are not shaded as such.

    Returns None on success, or a message when plotting is unavailable or there is
    nothing to plot.
    """
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
        from matplotlib.patches import Patch
    except ImportError:
        return MISSING_MATPLOTLIB
    samples = running_samples(samples, transitions)
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
        if not unloaded and _base(phase) in ("unload", "reload"):
            shade = None
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


# -- Mermaid charts for the markdown report -------------------------------------------------
# A pull-request comment renders Mermaid `xychart-beta` blocks but no relative image links, so
# the report carries its memory charts as text. xychart-beta spreads each line's values evenly
# over the x axis, so every line of a chart needs one value per category: the starts of a
# count are aligned by the phases they all ran (the schedule is the same), not by seconds.

# Mermaid's lines carry no legend: the colours are fixed and named in the caption.
_LINE_COLOURS = (("#1f77b4", "blue"), ("#ff7f0e", "orange"), ("#2ca02c", "green"), ("#d62728", "red"))
_SKIPPED = {"idle", "shutdown"}


class StartMemory(NamedTuple):
    """One server start's memory record: its name, samples and phase transitions, and
    whether any of its unload requests succeeded (a 404 unloads nothing)."""

    name: str
    samples: list[Mapping[str, object]]
    transitions: list[tuple[float, str]]
    unloaded: bool


def running_samples(
    samples: Sequence[Mapping[str, object]], transitions: Sequence[tuple[float, str]]
) -> list[Mapping[str, object]]:
    """The samples taken while the server ran: before parval began to stop it, each with a
    process measured (a reading after the process is gone is not the server's memory)."""
    stop = min((t for t, p in transitions if _base(p) == "shutdown"), default=None)
    out = []
    for s in samples:
        if stop is not None and _time(s) >= stop:
            continue
        if s.get("kind") == "host" and not s.get("pids"):
            continue
        out.append(s)
    return sorted(out, key=_time)


def phase_is_first_cold(base: str, k: str) -> bool:
    return base == "cold_wave" and k == "0"


def _category(base: str, k: str, seen: dict[str, int], unloaded: bool) -> str | None:
    if base in ("unload", "reload") and not unloaded:
        # nothing was unloaded: the requests that follow ran on the still-loaded model
        if base == "unload":
            return None
        base = "rerun"
    seen[base] = seen.get(base, 0) + 1
    if k:
        return "cold" if phase_is_first_cold(base, k) else f"{base.removesuffix('_wave')} {k}"
    short = {"startup": "start", "cold_wave": "cold", "serial": "serial"}.get(base, base.removesuffix("_wave"))
    return short if base in ("startup", "cold_wave", "serial") else f"{short} {seen[base]}"


def phase_peaks(start: StartMemory, key: str) -> list[tuple[str, float]]:
    """(phase label, MiB) in the order the start ran them: the largest `key` reading inside
    the phase (an unload: its last), or the latest reading before its end where the phase
    was shorter than one sampling interval. Idle gaps and the shutdown are left out."""
    rows = [s for s in running_samples(start.samples, start.transitions) if s.get(key) is not None]
    if not rows:
        return []
    spans = sorted(start.transitions)
    out: list[tuple[str, float]] = []
    seen: dict[str, int] = {}
    for i, (t, phase) in enumerate(spans):
        base, _, k = phase.partition(":")
        if base in _SKIPPED:
            if base == "shutdown":
                break
            continue
        label = _category(base, k, seen, start.unloaded)
        if label is None:
            continue
        end = spans[i + 1][0] if i + 1 < len(spans) else float("inf")
        inside = [as_float(s[key]) for s in rows if t <= _time(s) < end]
        before = [as_float(s[key]) for s in rows if _time(s) < end]
        if inside:
            # an unload's figure is the level it left, not the peak it started from
            out.append((label, inside[-1] if base == "unload" else max(inside)))
        elif before:
            out.append((label, before[-1]))
    return out


def _quoted(label: str) -> str:
    return '"' + label.replace('"', "'") + '"'


def mermaid_memory_chart(count: int, starts: Sequence[StartMemory], *, key: str, what: str) -> list[str]:
    """One count's chart: one line per start over the phases every plotted start ran, then a
    caption naming each line's colour, each start's peak and what was left out. Empty when
    no start has a reading of `key`."""
    peaks = [(s, phase_peaks(s, key)) for s in starts]
    peaks = [(s, p) for s, p in peaks if p]
    if not peaks:
        return []
    labels = [label for label, _ in max(peaks, key=lambda sp: len(sp[1]))[1]]
    plotted = [(s, dict(p)) for s, p in peaks if all(label in dict(p) for label in labels)][: len(_LINE_COLOURS)]
    left_out = [s.name for s, _ in peaks if s.name not in {p.name for p, _ in plotted}]
    values = [v for _, p in plotted for v in (p[label] for label in labels)]
    low, high = min(values), max(values)
    pad = max((high - low) * 0.1, 1.0)
    palette = ", ".join(c for c, _ in _LINE_COLOURS[: len(plotted)])
    lines = [
        "```mermaid",
        '%%{init: {"themeVariables": {"xyChart": {"plotColorPalette": "' + palette + '"}}}}%%',
        "xychart-beta",
        f'    title "count {count}: {what} per phase (MiB)"',
        "    x-axis [" + ", ".join(_quoted(label) for label in labels) + "]",
        f'    y-axis "MiB" {max(0.0, low - pad):.0f} --> {high + pad:.0f}',
        *[f"    line [{', '.join(f'{p[label]:.1f}' for label in labels)}]" for _, p in plotted],
        "```",
        "",
    ]
    caption = "; ".join(
        f"{colour}: {s.name} (peak {max(p.values()):.1f} MiB)"
        for (s, p), (_, colour) in zip(plotted, _LINE_COLOURS, strict=False)
    )
    notes = [f"Lines: {caption}. Each point is the phase's peak (an unload's: the level it left)."]
    if left_out:
        notes.append(f"Not plotted (did not run every phase above): {', '.join(left_out)}.")
    if any(not s.unloaded for s, _ in plotted):
        notes.append("No unload succeeded on this server: its unload/reload cycles are shown as `rerun` phases.")
    return [*lines, " ".join(notes), ""]

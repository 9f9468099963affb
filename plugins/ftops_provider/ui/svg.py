"""Small server-side SVG charts (no JavaScript build step): a time series and a layered topology."""

from __future__ import annotations

from html import escape


def line_chart(points: list[tuple[str, float]], *, title: str, y_label: str, width: int = 640, height: int = 220) -> str:
    """A line chart of ``(label, value)`` points in order, values in [0, 1] (fidelity, accuracy)."""
    pad_l, pad_r, pad_t, pad_b = 48, 16, 28, 36
    inner_w, inner_h = width - pad_l - pad_r, height - pad_t - pad_b
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" aria-label="{escape(title)}">',
             f'<text x="{pad_l}" y="18" font-size="14" font-weight="bold">{escape(title)}</text>']
    for tick in (0.0, 0.25, 0.5, 0.75, 1.0):
        y = pad_t + inner_h * (1 - tick)
        parts.append(f'<line x1="{pad_l}" x2="{width - pad_r}" y1="{y:.1f}" y2="{y:.1f}" stroke="#ddd"/>')
        parts.append(f'<text x="{pad_l - 6}" y="{y + 4:.1f}" font-size="11" text-anchor="end">{tick:.2f}</text>')
    parts.append(f'<text x="12" y="{pad_t + inner_h / 2:.1f}" font-size="11" transform="rotate(-90 12 {pad_t + inner_h / 2:.1f})" '
                 f'text-anchor="middle">{escape(y_label)}</text>')
    if points:
        step = inner_w / max(1, len(points) - 1)
        coords = [(pad_l + i * step if len(points) > 1 else pad_l + inner_w / 2, pad_t + inner_h * (1 - max(0.0, min(1.0, v))))
                  for i, (_, v) in enumerate(points)]
        parts.append('<polyline fill="none" stroke="#1f6feb" stroke-width="2" points="'
                     + " ".join(f"{x:.1f},{y:.1f}" for x, y in coords) + '"/>')
        for (x, y), (label, value) in zip(coords, points):
            parts.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="4" fill="#1f6feb"><title>{escape(label)}: {value:.4f}</title></circle>')
            parts.append(f'<text x="{x:.1f}" y="{height - 12}" font-size="10" text-anchor="middle">{escape(label)}</text>')
    parts.append("</svg>")
    return "".join(parts)


def topology_graph(operators: list[tuple[str, list[str]]], edges: list[tuple[str, str]], highlighted: set[str],
                   *, width: int = 640) -> str:
    """Tasks in columns by operator (topological order), substreams as lines, replicated tasks filled."""
    col_w = width / max(1, len(operators))
    tallest = max((len(tasks) for _, tasks in operators), default=1)
    row_h = 26
    height = 40 + tallest * row_h
    pos: dict[str, tuple[float, float]] = {}
    for c, (_, tasks) in enumerate(operators):
        top = 34 + (tallest - len(tasks)) * row_h / 2
        for r, task in enumerate(tasks):
            pos[task] = (col_w * c + col_w / 2, top + r * row_h + row_h / 2)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" aria-label="topology">']
    for c, (name, _) in enumerate(operators):
        parts.append(f'<text x="{col_w * c + col_w / 2:.1f}" y="18" font-size="12" font-weight="bold" text-anchor="middle">{escape(name)}</text>')
    for a, b in edges:
        (x1, y1), (x2, y2) = pos[a], pos[b]
        parts.append(f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" stroke="#bbb"/>')
    for task, (x, y) in pos.items():
        fill = "#2da44e" if task in highlighted else "#fff"
        parts.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="8" fill="{fill}" stroke="#333"><title>{escape(task)}'
                     f'{" (replicated)" if task in highlighted else ""}</title></circle>')
    parts.append("</svg>")
    return "".join(parts)
